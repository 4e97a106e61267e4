"""Without a GPU, the CUDA backend must run under the simulator, never silently skip."""

from conftest import REAL_GPU

from gpu_tree.backends.cuda import cuda_status


def test_cuda_backend_is_exercised_on_a_gpu_or_the_simulator():
    usable, reason, xp = cuda_status()
    assert usable, reason
    if not REAL_GPU:
        from numba import config

        assert config.ENABLE_CUDASIM and reason.startswith("CUDA simulator")

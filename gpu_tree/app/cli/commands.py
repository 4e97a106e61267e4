"""The command set: every subcommand added to the ``gputree`` group."""

from __future__ import annotations

import click

from gpu_tree.app.cli.bench_command import bench
from gpu_tree.app.cli.evaluate_command import evaluate
from gpu_tree.app.cli.export_command import export
from gpu_tree.app.cli.group import main
from gpu_tree.app.cli.info_command import info
from gpu_tree.app.cli.predict_command import predict
from gpu_tree.app.cli.train_command import train


# warm-up lives with the group, not in a module of its own: it runs the other commands
# through the group, which is whole only once they are added here.
@click.command("warm-up", short_help="Compile the CPU kernels ahead of the first fit.")
def warm_up():
    """Compile and cache the CPU kernels that training, prediction and ``gputree bench``
    use, so that later commands start without compiling: for a Docker image's build, a
    CI cache or a notebook server. It trains and predicts small and large synthetic files
    through this command line; minutes on a fresh install, seconds once cached."""
    from gpu_tree.app.warm_up import main as run_warm_up

    run_warm_up(main)


for _command in (train, predict, evaluate, export, info, warm_up, bench):
    main.add_command(_command)

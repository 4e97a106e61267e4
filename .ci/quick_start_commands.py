"""Print the commands in the code blocks of README.md's '## Quick start' section, one per line."""

import re
import sys


def quick_start_commands(readme_text: str) -> list[str]:
    match = re.search(r"^## Quick start\s*$(.*?)(?=^## |\Z)", readme_text, flags=re.M | re.S)
    if match is None:
        return []
    blocks = re.findall(r"^```[a-z]*\n(.*?)^```", match.group(1), flags=re.M | re.S)
    commands = []
    for block in blocks:
        for line in block.splitlines():
            line = line.strip()
            if line and not line.startswith("#"):
                commands.append(line)
    return commands


if __name__ == "__main__":
    with open(sys.argv[1], encoding="utf-8") as readme:
        for command in quick_start_commands(readme.read()):
            print(command)

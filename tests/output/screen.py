"""What a terminal shows after some output: enough of a terminal to read rich's live displays
(carriage return, newline, cursor up, erase line and screen) and to ignore styles."""

from __future__ import annotations

import io
import re

#: a control sequence: ESC [ parameters final-letter
_CONTROL = re.compile(r"\x1b\[([?0-9;]*)([A-Za-z])")


def screen(output: str) -> list[str]:
    """The lines on the screen, trailing spaces and empty lines at the end dropped."""
    lines: list[list[str]] = [[]]
    row = column = 0
    position = 0
    while position < len(output):
        control = _CONTROL.match(output, position)
        if control is not None:
            position = control.end()
            number = int(control.group(1) or 1) if control.group(1).isdigit() else 1
            command, argument = control.group(2), control.group(1)
            if command == "A":
                row = max(0, row - number)
            elif command == "K" and argument == "2":
                lines[row] = []
            elif command == "K":
                del lines[row][column:]
            elif command == "H":
                row = column = 0
            elif command == "J":
                del lines[row + 1 :]
                del lines[row][column:]
            continue  # styles, cursor shown or hidden: nothing on the screen
        char = output[position]
        position += 1
        if char == "\n":
            row, column = row + 1, 0
            if row == len(lines):
                lines.append([])
        elif char == "\r":
            column = 0
        else:
            line = lines[row]
            line.extend(" " * (column - len(line)))
            line[column : column + 1] = [char]
            column += 1
    text = ["".join(line).rstrip() for line in lines]
    while text and not text[-1]:
        text.pop()
    return text


class FakeTerminal(io.StringIO):
    """A StringIO that says it is a terminal, as ``sys.stdout`` does in a shell."""

    def isatty(self) -> bool:
        return True

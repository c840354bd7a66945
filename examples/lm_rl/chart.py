"""Line charts written as PNG files in pure Python (zlib and struct), for machines without
matplotlib: panels stacked vertically, each with its curves, a frame, light grid lines, and its
value range and title in a small built-in pixel font."""

from __future__ import annotations

import struct
import zlib

WHITE, BLACK, GREY = (255, 255, 255), (0, 0, 0), (225, 225, 225)
COLORS = [(31, 119, 180), (214, 39, 40), (44, 160, 44), (148, 103, 189)]

# 3 x 5 glyphs: each row of a glyph is 3 bits, the high bit on the left.
_FONT = {
    "0": "75557", "1": "26227", "2": "61247", "3": "61616", "4": "55711", "5": "74616",
    "6": "34757", "7": "71222", "8": "75757", "9": "75711", ".": "00002", "-": "00700",
    " ": "00000", ":": "02020", "a": "03557", "b": "44757", "c": "03443", "d": "11757",
    "e": "07643", "f": "34642", "g": "75716", "h": "44755", "i": "20222", "k": "45655",
    "l": "22223", "m": "07775", "n": "06555", "o": "02552", "p": "07574", "r": "03544",
    "s": "03636", "t": "27223", "u": "05557", "v": "05552", "w": "05777", "x": "05255",
    "y": "55712", "(": "12221", ")": "42224", "/": "11244", "_": "00007", ",": "00024",
    "=": "07070", "+": "02720", "[": "32223", "]": "62226",
}  # fmt: skip


class Canvas:
    """An RGB image as rows of pixels."""

    def __init__(self, width: int, height: int):
        self.width, self.height = width, height
        self.rows = [[WHITE] * width for _ in range(height)]

    def set(self, x: int, y: int, color: tuple) -> None:
        if 0 <= x < self.width and 0 <= y < self.height:
            self.rows[y][x] = color

    def line(self, x0: int, y0: int, x1: int, y1: int, color: tuple) -> None:
        """Bresenham's line, two pixels thick."""
        dx, dy = abs(x1 - x0), -abs(y1 - y0)
        sx, sy = (1 if x0 < x1 else -1), (1 if y0 < y1 else -1)
        error = dx + dy
        while True:
            self.set(x0, y0, color)
            self.set(x0, y0 + 1, color)
            if x0 == x1 and y0 == y1:
                return
            double = 2 * error
            if double >= dy:
                error += dy
                x0 += sx
            if double <= dx:
                error += dx
                y0 += sy

    def text(self, x: int, y: int, text: str, color: tuple = BLACK, scale: int = 2) -> None:
        """``text`` (lowercased; unknown characters as blanks) from its top-left corner."""
        for char in text.lower():
            glyph = _FONT.get(char, "00000")
            for row, bits in enumerate(glyph):
                for column in range(3):
                    if int(bits, 16) & (4 >> column):
                        for i in range(scale):
                            for j in range(scale):
                                self.set(x + column * scale + i, y + row * scale + j, color)
            x += 4 * scale

    def png(self) -> bytes:
        raw = b"".join(b"\x00" + bytes(v for pixel in row for v in pixel) for row in self.rows)

        def chunk(kind: bytes, data: bytes) -> bytes:
            body = kind + data
            return struct.pack(">I", len(data)) + body + struct.pack(">I", zlib.crc32(body))

        header = struct.pack(">IIBBBBB", self.width, self.height, 8, 2, 0, 0, 0)
        return (
            b"\x89PNG\r\n\x1a\n"
            + chunk(b"IHDR", header)
            + chunk(b"IDAT", zlib.compress(raw, 9))
            + chunk(b"IEND", b"")
        )


def line_chart(path: str, panels: list[dict], width: int = 640, panel_height: int = 220) -> None:
    """Writes stacked panels to ``path``: each ``{"title": str, "curves": {label: (xs, ys)}}``
    (a curve's colour is its place in the panel; the title should name them)."""
    canvas = Canvas(width, panel_height * len(panels))
    left, right, top, bottom = 70, 20, 28, 30
    for index, panel in enumerate(panels):
        y0 = index * panel_height
        xs = sorted({float(x) for curve_xs, _ in panel["curves"].values() for x in curve_xs})
        values = [float(v) for _, curve in panel["curves"].values() for v in curve]
        low, high = min(values), max(values)
        if high - low < 1e-9:
            low, high = low - 0.5, high + 0.5
        x_low, x_high = min(xs), max(xs) if max(xs) > min(xs) else min(xs) + 1
        plot_w, plot_h = width - left - right, panel_height - top - bottom

        def px(x: float, x_low=x_low, x_high=x_high, plot_w=plot_w) -> int:
            return left + round((x - x_low) / (x_high - x_low) * plot_w)

        def py(v: float, low=low, high=high, plot_h=plot_h, y0=y0) -> int:
            return y0 + top + round((high - v) / (high - low) * plot_h)

        for k in range(5):
            v = low + (high - low) * k / 4
            canvas.line(left, py(v), left + plot_w, py(v), GREY)
            canvas.text(4, py(v) - 5, f"{v:.3g}")
        for x, yy in ((left, y0 + top), (left + plot_w, y0 + top)):
            canvas.line(x, yy, x, yy + plot_h, BLACK)
        canvas.line(left, y0 + top + plot_h, left + plot_w, y0 + top + plot_h, BLACK)
        canvas.line(left, y0 + top, left + plot_w, y0 + top, BLACK)
        canvas.text(left, y0 + 6, panel["title"])
        canvas.text(left, y0 + top + plot_h + 8, f"step {xs[0]:.0f}")
        last = f"{xs[-1]:.0f}"
        canvas.text(left + plot_w - 8 * len(last), y0 + top + plot_h + 8, last)
        for color, (curve_xs, curve) in zip(COLORS, panel["curves"].values(), strict=False):
            points = [(px(x), py(v)) for x, v in zip(curve_xs, curve, strict=True)]
            for (a, b), (c, d) in zip(points, points[1:], strict=False):
                canvas.line(a, b, c, d, color)
    with open(path, "wb") as f:
        f.write(canvas.png())

"""PNG charts drawn pixel by pixel in pure Python (a 3x5 pixel font, no plotting library), for
the datasets server's `plot` and the station server of the tests."""

from __future__ import annotations

import math
import struct
import zlib
from collections.abc import Callable, Iterable

WIDTH, HEIGHT = 320, 240
LEFT, RIGHT, TOP, BOTTOM = 46, 12, 24, 34
RGB = tuple[int, int, int]
WHITE: RGB = (255, 255, 255)
BLACK: RGB = (40, 40, 40)
GRID: RGB = (225, 225, 225)
PALETTE: tuple[RGB, ...] = ((31, 119, 180), (255, 127, 14), (44, 160, 44), (214, 39, 40), (148, 103, 189))

# A 3x5 pixel font: five rows per glyph, each row a 3-bit mask (4 = left pixel, 1 = right).
_FONT: dict[str, str] = {
    "0": "75557", "1": "26227", "2": "71747", "3": "71317", "4": "55711", "5": "74717", "6": "74757",
    "7": "71111", "8": "75757", "9": "75717", ".": "00002", "-": "00700", "+": "02720", "_": "00007",
    "/": "11244", ":": "02020", " ": "00000", "?": "71202",
    "A": "25755", "B": "65656", "C": "34443", "D": "65556", "E": "74647", "F": "74644", "G": "34553",
    "H": "55755", "I": "72227", "J": "11152", "K": "55655", "L": "44447", "M": "57755", "N": "65555",
    "O": "25552", "P": "65644", "Q": "25563", "R": "65655", "S": "34216", "T": "72222", "U": "55557",
    "V": "55552", "W": "55775", "X": "55255", "Y": "55222", "Z": "71247",
}  # fmt: skip


class Canvas:
    """An RGB pixel buffer with the few drawing primitives a chart needs."""

    def __init__(self, width: int, height: int, background: RGB = WHITE) -> None:
        """Create a ``width`` x ``height`` canvas filled with ``background``."""
        self.width = width
        self.height = height
        self.pixels = bytearray(bytes(background) * (width * height))

    def set(self, x: int, y: int, color: RGB) -> None:
        """Paint one pixel (ignored outside the canvas)."""
        if 0 <= x < self.width and 0 <= y < self.height:
            i = (y * self.width + x) * 3
            self.pixels[i : i + 3] = bytes(color)

    def rect(self, x0: int, y0: int, x1: int, y1: int, color: RGB) -> None:
        """Fill the rectangle with corners (x0, y0) and (x1, y1), inclusive."""
        for y in range(min(y0, y1), max(y0, y1) + 1):
            for x in range(min(x0, x1), max(x0, x1) + 1):
                self.set(x, y, color)

    def line(self, x0: int, y0: int, x1: int, y1: int, color: RGB) -> None:
        """Draw a straight line (Bresenham)."""
        dx, dy = abs(x1 - x0), -abs(y1 - y0)
        sx, sy = (1 if x0 < x1 else -1), (1 if y0 < y1 else -1)
        err = dx + dy
        while True:
            self.set(x0, y0, color)
            if x0 == x1 and y0 == y1:
                return
            e2 = 2 * err
            if e2 >= dy:
                err += dy
                x0 += sx
            if e2 <= dx:
                err += dx
                y0 += sy

    def dot(self, cx: int, cy: int, color: RGB, radius: int = 2) -> None:
        """Draw a filled disc."""
        for y in range(-radius, radius + 1):
            for x in range(-radius, radius + 1):
                if x * x + y * y <= radius * radius + 1:
                    self.set(cx + x, cy + y, color)

    def text(self, x: int, y: int, text: str, color: RGB = BLACK, scale: int = 1) -> None:
        """Write ``text`` (upper-cased) with its top-left corner at (x, y)."""
        for ch in text.upper():
            rows = _FONT.get(ch, _FONT["?"])
            for r, mask in enumerate(rows):
                bits = int(mask)
                for c in range(3):
                    if bits & (4 >> c):
                        self.rect(
                            x + c * scale,
                            y + r * scale,
                            x + c * scale + scale - 1,
                            y + (r + 1) * scale - 1,
                            color,
                        )
            x += 4 * scale

    def png(self) -> bytes:
        """Encode the canvas as an 8-bit RGB PNG."""
        stride = self.width * 3
        raw = b"".join(b"\x00" + bytes(self.pixels[y * stride : (y + 1) * stride]) for y in range(self.height))

        def chunk(tag: bytes, data: bytes) -> bytes:
            return struct.pack(">I", len(data)) + tag + data + struct.pack(">I", zlib.crc32(tag + data) & 0xFFFFFFFF)

        header = struct.pack(">IIBBBBB", self.width, self.height, 8, 2, 0, 0, 0)
        return (
            b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", header) + chunk(b"IDAT", zlib.compress(raw, 9)) + chunk(b"IEND", b"")
        )


def text_width(text: str, scale: int = 1) -> int:
    """Width in pixels of ``text`` drawn by `Canvas.text`."""
    return max(0, 4 * scale * len(text) - scale)


def _ticks(lo: float, hi: float, count: int = 6) -> list[float]:
    """About ``count`` round tick values covering [lo, hi]."""
    if hi <= lo:
        return [lo]
    raw_step = (hi - lo) / max(1, count - 1)
    magnitude = 10 ** math.floor(math.log10(raw_step))
    step = next(m * magnitude for m in (1, 2, 2.5, 5, 10) if m * magnitude >= raw_step)
    first = math.ceil(lo / step) * step
    ticks = []
    value = first
    while value <= hi + step * 1e-9:
        ticks.append(round(value, 10))
        value += step
    return ticks


def _label(value: float) -> str:
    """A short tick label."""
    return f"{value:.4g}".replace("e+0", "e").replace("e+", "e")


def _frame(canvas: Canvas, title: str, y_lo: float, y_hi: float) -> Callable[[float], int]:
    """Draw the title, the y grid and axes; return the y data-to-pixel mapping."""
    plot_bottom = HEIGHT - BOTTOM
    scale = 2 if text_width(title, 2) <= WIDTH - 8 else 1
    canvas.text((WIDTH - text_width(title, scale)) // 2, 6, title, scale=scale)

    def to_py(v: float) -> int:
        return plot_bottom - round((v - y_lo) / (y_hi - y_lo) * (plot_bottom - TOP))

    for tick in _ticks(y_lo, y_hi):
        py = to_py(tick)
        canvas.line(LEFT, py, WIDTH - RIGHT, py, GRID)
        label = _label(tick)
        canvas.text(LEFT - 4 - text_width(label), py - 2, label)
    canvas.line(LEFT, TOP, LEFT, plot_bottom, BLACK)
    canvas.line(LEFT, plot_bottom, WIDTH - RIGHT, plot_bottom, BLACK)
    return to_py


def _padded(values: Iterable[float]) -> tuple[float, float]:
    """The range of ``values`` widened by 5% on each side (never empty)."""
    vals = list(values) or [0.0]
    lo, hi = min(vals), max(vals)
    if hi == lo:
        return lo - 1, hi + 1
    pad = (hi - lo) * 0.05
    return lo - pad, hi + pad


def scatter_png(points: list[tuple[float, float]], title: str) -> bytes:
    """A scatter plot of ``points``."""
    canvas = Canvas(WIDTH, HEIGHT)
    x_lo, x_hi = _padded(p[0] for p in points)
    y_lo, y_hi = _padded(p[1] for p in points)
    to_py = _frame(canvas, title, y_lo, y_hi)
    plot_bottom = HEIGHT - BOTTOM

    def to_px(v: float) -> int:
        return LEFT + round((v - x_lo) / (x_hi - x_lo) * (WIDTH - RIGHT - LEFT))

    for tick in _ticks(x_lo, x_hi):
        px = to_px(tick)
        canvas.line(px, plot_bottom, px, plot_bottom + 3, BLACK)
        label = _label(tick)
        canvas.text(px - text_width(label) // 2, plot_bottom + 6, label)
    for x, y in points:
        canvas.dot(to_px(x), to_py(y), PALETTE[0])
    return canvas.png()


def bar_png(bars: list[tuple[str, float]], title: str) -> bytes:
    """A bar chart, one bar per (label, value), from a zero baseline."""
    canvas = Canvas(WIDTH, HEIGHT)
    values = [v for _, v in bars]
    y_lo = min([0.0, *values])
    y_hi = max([0.0, *values])
    if y_hi == y_lo:
        y_hi = y_lo + 1
    y_hi += (y_hi - y_lo) * 0.05
    to_py = _frame(canvas, title, y_lo, y_hi)
    plot_bottom = HEIGHT - BOTTOM
    slot = (WIDTH - RIGHT - LEFT) / max(1, len(bars))
    for i, (label, value) in enumerate(bars):
        x0 = LEFT + round(i * slot + slot * 0.15)
        x1 = LEFT + round((i + 1) * slot - slot * 0.15)
        canvas.rect(x0, to_py(0.0), x1, to_py(value), PALETTE[i % len(PALETTE)])
        fits = max(1, int(slot // 4))
        short = label if len(label) <= fits else label[: max(1, fits - 1)] + "."
        canvas.text(round(LEFT + (i + 0.5) * slot) - text_width(short) // 2, plot_bottom + 6, short)
    canvas.line(LEFT, to_py(0.0), WIDTH - RIGHT, to_py(0.0), BLACK)
    return canvas.png()

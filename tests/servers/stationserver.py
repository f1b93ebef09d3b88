"""A token-protected weather-station API over streamable HTTP: the server of the record/replay demo.

Usage::

    STATION_TOKEN=... python tests/servers/stationserver.py [--host 127.0.0.1] [--port 8000]

It refuses to start without ``STATION_TOKEN``; every HTTP request without the header
``Authorization: Bearer $STATION_TOKEN`` gets 401. Its data is "live": readings are for the
hours before now, so two runs never answer the same (what cassettes are for).

Tools: ``stations()``; ``readings(station, hours=12)`` -> ``{"station", "readings": [{time,
temperature_c, humidity_pct}]}``; ``chart(station, hours=12)`` -> a PNG bar chart of the
temperatures. Resource ``station://index`` (the stations as JSON); prompt ``weather_report(station)``.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import sys
import time
import zlib
from typing import Annotated, Any

import uvicorn
from mcp.server import MCPServer
from mcp.server.mcpserver.utilities.types import Image
from pydantic import BaseModel, Field

from workbench_magic.demo.drawing import Canvas, text_width

STATIONS = {
    "harbor": {"name": "Harbor pier", "base_c": 14.0, "humidity": 78.0},
    "hill": {"name": "Hill top", "base_c": 9.5, "humidity": 64.0},
    "valley": {"name": "Valley farm", "base_c": 12.0, "humidity": 70.0},
}

mcp = MCPServer("weather-station", instructions="Hourly readings of three weather stations (token needed).")


class Reading(BaseModel):
    time: str
    temperature_c: float
    humidity_pct: float


class Readings(BaseModel):
    station: str
    readings: list[Reading]


def _jitter(station: str, hour: int) -> float:
    """A repeatable pseudo-random value in [-1, 1) for one station and hour."""
    return (zlib.crc32(f"{station}:{hour}".encode()) % 2000) / 1000 - 1


def _readings(station: str, hours: int) -> list[Reading]:
    if station not in STATIONS:
        raise ValueError(f"Unknown station {station!r}: one of {', '.join(STATIONS)}")
    info = STATIONS[station]
    now = int(time.time() // 3600)
    out = []
    for hour in range(now - hours + 1, now + 1):
        daily = math.sin(2 * math.pi * ((hour % 24) - 9) / 24)
        out.append(
            Reading(
                time=time.strftime("%Y-%m-%dT%H:00Z", time.gmtime(hour * 3600)),
                temperature_c=round(float(info["base_c"]) + 5 * daily + _jitter(station, hour), 1),
                humidity_pct=round(float(info["humidity"]) - 10 * daily + 3 * _jitter(station, -hour), 1),
            )
        )
    return out


@mcp.tool()
def stations() -> dict[str, Any]:
    """The stations: id, name."""
    return {"stations": [{"id": key, "name": str(info["name"])} for key, info in STATIONS.items()]}


@mcp.tool()
def readings(
    station: Annotated[str, Field(description="Station id (see stations)")],
    hours: Annotated[int, Field(ge=1, le=72, description="How many hours back")] = 12,
) -> Readings:
    """Hourly temperature and humidity of a station, the latest `hours` hours."""
    return Readings(station=station, readings=_readings(station, hours))


@mcp.tool()
def chart(
    station: Annotated[str, Field(description="Station id (see stations)")],
    hours: Annotated[int, Field(ge=1, le=72, description="How many hours back")] = 12,
) -> Image:
    """A bar chart of a station's temperatures, the latest `hours` hours."""
    values = [r.temperature_c for r in _readings(station, hours)]
    width, height, bottom = 40 + 12 * len(values), 140, 120
    canvas = Canvas(width, height)
    title = f"{station} temperature C"
    canvas.text((width - text_width(title)) // 2, 6, title)
    top = max([*values, 1.0])
    for i, value in enumerate(values):
        bar = round((bottom - 24) * max(value, 0.0) / top)
        canvas.rect(24 + 12 * i, bottom - bar, 31 + 12 * i, bottom, (70, 110, 200))
    canvas.line(20, bottom, width - 10, bottom, (0, 0, 0))
    return Image(data=canvas.png(), format="png")


@mcp.resource("station://index", name="stations", mime_type="application/json")
def index() -> str:
    """The stations as JSON."""
    return json.dumps(stations())


@mcp.prompt()
def weather_report(station: str) -> str:
    """Ask for a short weather report of a station."""
    return f"Write a two-sentence weather report for the station {station} from its latest readings."


class BearerGate:
    """ASGI middleware: HTTP requests need `Authorization: Bearer <token>`, else 401."""

    def __init__(self, app: Any, token: str) -> None:
        self.app = app
        self.expected = f"Bearer {token}".encode()

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] == "http" and dict(scope.get("headers") or []).get(b"authorization") != self.expected:
            await send({"type": "http.response.start", "status": 401, "headers": [(b"content-type", b"text/plain")]})
            await send({"type": "http.response.body", "body": b"missing or wrong bearer token\n"})
            return
        await self.app(scope, receive, send)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=8000)
    args = parser.parse_args(argv)
    token = os.environ.get("STATION_TOKEN", "")
    if not token:
        sys.exit("stationserver: set STATION_TOKEN (the bearer token clients must send)")
    app = BearerGate(mcp.streamable_http_app(host=args.host), token)
    uvicorn.run(app, host=args.host, port=args.port, log_level="warning")


if __name__ == "__main__":
    main()

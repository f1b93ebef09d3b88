"""Record `weather-station.json`, the cassette notebook 08 replays, against the live station server.

Run from anywhere, with any token (this script starts the server with it and the client sends it):

    STATION_TOKEN=some-long-token python notebooks/cassettes/record_station.py

The token never reaches the cassette: it comes from `${STATION_TOKEN}` in the config's headers,
and the workbench masks such values in everything it records.
"""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
from pathlib import Path

from workbench_magic import Workbench

HERE = Path(__file__).resolve().parent
SERVER = HERE.parent.parent / "tests" / "servers" / "stationserver.py"
CASSETTE = HERE / "weather-station.json"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def wait_listening(port: int, proc: subprocess.Popen[bytes], timeout: float = 20.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"the station server exited with {proc.returncode}")
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=0.2):
                return
        except OSError:
            time.sleep(0.05)  # the port is not bound yet: nothing to wait on but time
    raise RuntimeError("the station server did not start listening")


def session(wb: Workbench) -> None:
    """What notebook 08 does (the same calls, so it finds every answer in the cassette)."""
    wb.open("weather")
    wb.resources("weather")
    wb.prompts("weather")
    wb.call("weather/station/stations")
    wb.call("weather/station/readings", {"station": "harbor", "hours": 12})
    wb.call("weather/station/chart", {"station": "harbor", "hours": 12})
    wb.read_resource("weather/station", "station://index")
    wb.get_prompt("weather/station/weather_report", {"station": "harbor"})


def record(cassette: Path = CASSETTE) -> None:
    """Start the server (with $STATION_TOKEN), record `session` to `cassette`, stop the server."""
    if not os.environ.get("STATION_TOKEN"):
        sys.exit("record_station: set STATION_TOKEN first (any value: the server gets the same one)")
    port = free_port()
    proc = subprocess.Popen([sys.executable, str(SERVER), "--port", str(port)], stderr=subprocess.DEVNULL)
    try:
        wait_listening(port, proc)
        config = {
            "toolboxes": {
                "weather": {
                    "description": "A weather-station API that needs a token",
                    "mcpServers": {
                        "station": {
                            "url": f"http://127.0.0.1:{port}/mcp",
                            "headers": {"Authorization": "Bearer ${STATION_TOKEN}"},
                        }
                    },
                }
            }
        }
        wb = Workbench(config=config)
        try:
            with wb.record(cassette):
                session(wb)
        finally:
            wb.close_all()
    finally:
        proc.terminate()
        proc.wait(10)


if __name__ == "__main__":
    record()
    print(f"recorded {CASSETTE}")

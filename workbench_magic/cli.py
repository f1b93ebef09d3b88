"""The `workbench-magic` command: list toolboxes and tools, call a tool, run the demo."""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence

from workbench_magic.errors import WorkbenchError


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="workbench-magic", description="MCP Workbench for notebooks.")
    parser.add_argument("--config", help="config file (default: $WORKBENCH_CONFIG, ./workbench-config.json, demo)")
    sub = parser.add_subparsers(dest="command", required=True)
    sub.add_parser("list", help="list the configured toolboxes")
    tools = sub.add_parser("tools", help="open a toolbox and list its tools")
    tools.add_argument("target", help="toolbox or toolbox/server")
    call = sub.add_parser("call", help="call a tool: workbench-magic call dev/server/tool '{\"arg\": 1}'")
    call.add_argument("tool", help="toolbox/server/tool")
    call.add_argument("arguments", nargs="?", default="{}", help="JSON object of arguments")
    call.add_argument("--timeout", type=float, default=None)
    sub.add_parser("demo", help="open the embedded demo toolbox, call a few tools, print the results")
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of `workbench-magic` (and `python -m workbench_magic`)."""
    args = _parser().parse_args(argv)
    from workbench_magic.manager import Workbench

    try:
        if args.command == "demo":
            from workbench_magic.demo.smoke import run_demo

            return run_demo(args.config)
        wb = Workbench(config=args.config)
        try:
            if args.command == "list":
                print(repr(wb.toolboxes()))
            elif args.command == "tools":
                toolbox = args.target.split("/")[0]
                box = wb.open(toolbox)
                for reason in box.failed.values():
                    print(reason, file=sys.stderr)
                print(repr(wb.tools(args.target)))
            elif args.command == "call":
                try:
                    arguments = json.loads(args.arguments)
                except ValueError as exc:
                    raise WorkbenchError(f"Arguments must be a JSON object: {exc}") from None
                result = wb.call(args.tool, arguments, timeout=args.timeout)
                print(repr(result))
                return 1 if result.is_error else 0
        finally:
            wb.close_all()
    except WorkbenchError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())

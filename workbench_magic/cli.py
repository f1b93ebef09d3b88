"""The `workbench-magic` command: list toolboxes and tools, call a tool, snapshot a toolbox, diff two
snapshots, check a toolbox's schemas against model providers, serve, run the demo, print the config's
JSON Schema."""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence

from workbench_magic.vocabulary.errors import WorkbenchError

SERVE_ROOTS = """\
roots (the directories a downstream server may work in) come from, first to last:
  the server's own "roots" in the config;
  during a call, the client that made it (if it declared roots);
  stdio, a 2025-11-25 client that declared roots: that client, asked whenever a server asks;
    its roots/list_changed goes on to every server that follows roots;
  stdio, a 2026-07-28 client: the roots it last gave (asked before the first request that
    starts servers starts them; servers that follow roots are told when they change);
  otherwise (http, and clients without roots): none.
The working directory is never a root."""


def _port(text: str) -> int:
    """A TCP port, 1-65535 (argparse's usage error otherwise: uvicorn would listen nowhere)."""
    try:
        port = int(text)
    except ValueError:
        port = 0
    if not 1 <= port <= 65535:
        raise argparse.ArgumentTypeError(f"{text} is not a port (1-65535)")
    return port


def _parser() -> argparse.ArgumentParser:
    config_help = "config file (default: $WORKBENCH_CONFIG, ./workbench-config.json, the embedded demo)"
    parser = argparse.ArgumentParser(prog="workbench-magic", description="MCP Workbench for notebooks.")
    parser.add_argument("--config", help=config_help)
    # `--config` is accepted after the subcommand too (`workbench-magic serve --config PATH`)
    common = argparse.ArgumentParser(add_help=False)
    common.add_argument("--config", default=argparse.SUPPRESS, help=config_help)
    sub = parser.add_subparsers(dest="command", required=True)
    sub.add_parser("list", help="list the configured toolboxes", parents=[common])
    tools = sub.add_parser("tools", help="open a toolbox and list its tools", parents=[common])
    tools.add_argument("target", help="toolbox or toolbox/server")
    call = sub.add_parser(
        "call", help="call a tool: workbench-magic call dev/server/tool '{\"arg\": 1}'", parents=[common]
    )
    call.add_argument("tool", help="toolbox/server/tool")
    call.add_argument("arguments", nargs="?", default="{}", help="JSON object of arguments")
    call.add_argument("--timeout", type=float, default=None)
    sub.add_parser("demo", help="open the embedded demo toolbox, call a few tools, print the results", parents=[common])
    snapshot = sub.add_parser(
        "snapshot",
        help="record what a toolbox offers (servers, tools and their schemas, resources, prompts) as JSON",
        parents=[common],
    )
    snapshot.add_argument("toolbox")
    snapshot.add_argument("-o", "--output", help="file to write (default: standard output)")
    diff = sub.add_parser(
        "diff",
        help="what changed between two snapshots; exit status 1 when a client could break",
        parents=[common],
        epilog="exit status: 0 no breaking change, 1 a breaking change, 2 an error",
    )
    diff.add_argument("old", help="the earlier snapshot file")
    diff.add_argument("new", help="the later snapshot file")
    check = sub.add_parser(
        "check-schemas",
        help="whether OpenAI, Anthropic and Gemini accept each tool's input schema; exit status 1 when one is rejected",
        parents=[common],
        epilog="exit status: 0 every tool accepted (as it is or after lossless rewrites), 1 one rejected, 2 an error",
    )
    check.add_argument("toolbox", help="toolbox or toolbox/server")
    check.add_argument(
        "--provider",
        action="append",
        choices=["openai", "anthropic", "gemini"],
        help="judge only this provider (repeat for more; default: all three)",
    )
    serve = sub.add_parser(
        "serve",
        help="serve the toolboxes over MCP (meta-tools, optionally every tool)",
        parents=[common],
        epilog=SERVE_ROOTS,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    serve.add_argument("--mode", choices=["proxy", "dynamic"], default="proxy")
    serve.add_argument("--transport", choices=["stdio", "http"], default="stdio")
    serve.add_argument("--host", default="127.0.0.1")
    serve.add_argument("--port", type=_port, default=8765, help="HTTP: the port to listen on (1-65535)")
    serve.add_argument(
        "--token", default=None, help="HTTP: require 'Authorization: Bearer TOKEN' (default: $WORKBENCH_SERVE_TOKEN)"
    )
    sub.add_parser(
        "config-schema",
        help='print the JSON Schema of workbench-config.json (for editors: a config names it in "$schema")',
        epilog="e.g. workbench-magic config-schema > workbench-config.schema.json, then in the config: "
        '"$schema": "./workbench-config.schema.json"',
    )
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of `workbench-magic` (and `python -m workbench_magic`)."""
    args = _parser().parse_args(argv)
    if args.command == "config-schema":  # the config models only: no MCP SDK
        from workbench_magic.config.schema import schema_text

        print(schema_text(), end="")
        return 0
    early = None
    if args.command == "serve" and args.transport == "stdio":
        from workbench_magic.serve.early import EarlyAnswers

        early = EarlyAnswers.begin(args.config, args.mode)  # the handshake is answered while the rest imports
    from workbench_magic.api.workbench import Workbench

    try:
        if args.command == "serve":
            from workbench_magic.serve.run import serve

            return serve(
                args.config,
                mode=args.mode,
                transport=args.transport,
                host=args.host,
                port=args.port,
                token=args.token,
                early=early,
            )
        if args.command == "demo":
            from workbench_magic.demo.smoke import run_demo

            return run_demo(args.config)
        if args.command == "diff":
            changes = Workbench.diff(args.old, args.new)
            print(repr(changes))
            return 1 if changes.breaking else 0
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
            elif args.command == "snapshot":
                surface = wb.snapshot(args.toolbox)
                if args.output:
                    surface.save(args.output)
                    count = len(surface.servers)
                    print(f"{args.output}: {args.toolbox}, {count} server{'' if count == 1 else 's'}", file=sys.stderr)
                else:
                    print(surface.to_json(), end="")
            elif args.command == "check-schemas":
                report = wb.check_schemas(args.toolbox, providers=args.provider or ("openai", "anthropic", "gemini"))
                print(repr(report))
                return 1 if report.rejected else 0
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

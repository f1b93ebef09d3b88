"""The `workbench-magic` command: list toolboxes and tools, call a tool, snapshot a toolbox, diff two
snapshots, check a toolbox's schemas against model providers, serve, run the demo, print the config's
JSON Schema."""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, TypeAlias

from workbench_magic.vocabulary.errors import WorkbenchError

if TYPE_CHECKING:
    from workbench_magic.api.workbench import Workbench
    from workbench_magic.serve.early import EarlyAnswers

    Subparsers: TypeAlias = argparse._SubParsersAction[argparse.ArgumentParser]
    """What `add_subparsers` returns (argparse names its class privately)."""

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


CONFIG_HELP = "config file (default: $WORKBENCH_CONFIG, ./workbench-config.json, the embedded demo)"


def _parser() -> argparse.ArgumentParser:
    """The command line: `--config`, then one subcommand with its own options."""
    parser = argparse.ArgumentParser(prog="workbench-magic", description="MCP Workbench for notebooks.")
    parser.add_argument("--config", help=CONFIG_HELP)
    # `--config` is accepted after the subcommand too (`workbench-magic serve --config PATH`)
    common = argparse.ArgumentParser(add_help=False)
    common.add_argument("--config", default=argparse.SUPPRESS, help=CONFIG_HELP)
    sub = parser.add_subparsers(dest="command", required=True)
    _add_list(sub, common)
    _add_tools(sub, common)
    _add_call(sub, common)
    _add_doctor(sub, common)
    _add_demo(sub, common)
    _add_snapshot(sub, common)
    _add_diff(sub, common)
    _add_check_schemas(sub, common)
    _add_serve(sub, common)
    _add_config_schema(sub)
    return parser


def _add_list(sub: Subparsers, common: argparse.ArgumentParser) -> None:
    """`list`: the configured toolboxes."""
    sub.add_parser("list", help="list the configured toolboxes", parents=[common])


def _add_tools(sub: Subparsers, common: argparse.ArgumentParser) -> None:
    """`tools TARGET`: open a toolbox and list its tools."""
    tools = sub.add_parser("tools", help="open a toolbox and list its tools", parents=[common])
    tools.add_argument("target", help="toolbox or toolbox/server")


def _add_doctor(sub: Subparsers, common: argparse.ArgumentParser) -> None:
    """`doctor TARGET`: which step of connecting to a server fails."""
    doctor = sub.add_parser(
        "doctor",
        help="which step of connecting to a server fails, and what to do (exit 1 when a step failed)",
        parents=[common],
    )
    doctor.add_argument("target", help="toolbox/server")


def _add_call(sub: Subparsers, common: argparse.ArgumentParser) -> None:
    """`call TOOL [ARGUMENTS] [--timeout]`: call one tool."""
    call = sub.add_parser(
        "call", help="call a tool: workbench-magic call dev/server/tool '{\"arg\": 1}'", parents=[common]
    )
    call.add_argument("tool", help="toolbox/server/tool")
    call.add_argument("arguments", nargs="?", default="{}", help="JSON object of arguments")
    call.add_argument("--timeout", type=float, default=None)


def _add_demo(sub: Subparsers, common: argparse.ArgumentParser) -> None:
    """`demo`: the embedded demo toolbox, a few calls."""
    sub.add_parser("demo", help="open the embedded demo toolbox, call a few tools, print the results", parents=[common])


def _add_snapshot(sub: Subparsers, common: argparse.ArgumentParser) -> None:
    """`snapshot TOOLBOX [-o FILE]`: what a toolbox offers, as JSON."""
    snapshot = sub.add_parser(
        "snapshot",
        help="record what a toolbox offers (servers, tools and their schemas, resources, prompts) as JSON",
        parents=[common],
    )
    snapshot.add_argument("toolbox")
    snapshot.add_argument("-o", "--output", help="file to write (default: standard output)")


def _add_diff(sub: Subparsers, common: argparse.ArgumentParser) -> None:
    """`diff OLD NEW`: what changed between two snapshots."""
    diff = sub.add_parser(
        "diff",
        help="what changed between two snapshots; exit status 1 when a client could break",
        parents=[common],
        epilog="exit status: 0 no breaking change, 1 a breaking change, 2 an error",
    )
    diff.add_argument("old", help="the earlier snapshot file")
    diff.add_argument("new", help="the later snapshot file")


def _add_check_schemas(sub: Subparsers, common: argparse.ArgumentParser) -> None:
    """`check-schemas TOOLBOX [--provider ...]`: whether model providers accept the tools' input schemas."""
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


def _add_serve(sub: Subparsers, common: argparse.ArgumentParser) -> None:
    """`serve [--mode] [--toolbox] [--transport] [--host] [--port] [--token]`: the toolboxes over MCP."""
    serve = sub.add_parser(
        "serve",
        help="serve the toolboxes over MCP (meta-tools, optionally every tool)",
        parents=[common],
        epilog=SERVE_ROOTS,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    serve.add_argument(
        "--mode",
        choices=["proxy", "dynamic", "flat"],
        default="proxy",
        help="proxy: the meta-tools; dynamic: also every tool of an opened toolbox; flat: the toolboxes' own "
        "tools, prompts and resources (a name two servers share: toolbox__server__name)",
    )
    serve.add_argument(
        "--toolbox",
        action="append",
        default=None,
        metavar="NAME",
        help="serve this toolbox (repeatable; default: every toolbox of the config)",
    )
    serve.add_argument("--transport", choices=["stdio", "http"], default="stdio")
    serve.add_argument("--host", default="127.0.0.1")
    serve.add_argument("--port", type=_port, default=8765, help="HTTP: the port to listen on (1-65535)")
    serve.add_argument(
        "--token", default=None, help="HTTP: require 'Authorization: Bearer TOKEN' (default: $WORKBENCH_SERVE_TOKEN)"
    )


def _add_config_schema(sub: Subparsers) -> None:
    """`config-schema`: the config's JSON Schema (no `--config`: it reads no config)."""
    sub.add_parser(
        "config-schema",
        help='print the JSON Schema of workbench-config.json (for editors: a config names it in "$schema")',
        epilog="e.g. workbench-magic config-schema > workbench-config.schema.json, then in the config: "
        '"$schema": "./workbench-config.schema.json"',
    )


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of `workbench-magic` (and `python -m workbench_magic`)."""
    args = _parser().parse_args(argv)
    if args.command == "config-schema":  # the config models only: no MCP SDK
        return _config_schema()
    early = None
    if args.command == "serve" and args.transport == "stdio":
        from workbench_magic.serve.early import EarlyAnswers

        # the handshake is answered while the rest imports
        early = EarlyAnswers.begin(args.config, args.mode, tuple(args.toolbox or ()))
    from workbench_magic.api.workbench import Workbench

    try:
        if args.command == "serve":
            return _serve(args, early)
        if args.command == "demo":
            return _demo(args)
        if args.command == "diff":
            return _diff(args)
        wb = Workbench(config=args.config)
        try:
            return _WORKBENCH_COMMANDS[args.command](wb, args)
        finally:
            wb.close_all()
    except WorkbenchError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2


def _config_schema() -> int:
    """`config-schema`: print the config's JSON Schema."""
    from workbench_magic.config.schema import schema_text

    print(schema_text(), end="")
    return 0


def _serve(args: argparse.Namespace, early: EarlyAnswers | None) -> int:
    """`serve`: serve the toolboxes until the transport ends."""
    from workbench_magic.serve.run import serve

    return serve(
        args.config,
        mode=args.mode,
        toolboxes=tuple(args.toolbox or ()),
        transport=args.transport,
        host=args.host,
        port=args.port,
        token=args.token,
        early=early,
    )


def _demo(args: argparse.Namespace) -> int:
    """`demo`: run the embedded demo."""
    from workbench_magic.demo.smoke import run_demo

    return run_demo(args.config)


def _diff(args: argparse.Namespace) -> int:
    """`diff`: print the changes between two snapshots; 1 when one is breaking."""
    from workbench_magic.api.workbench import Workbench

    changes = Workbench.diff(args.old, args.new)
    print(repr(changes))
    return 1 if changes.breaking else 0


def _list(wb: Workbench, args: argparse.Namespace) -> int:
    """`list`: print the configured toolboxes."""
    print(repr(wb.toolboxes()))
    return 0


def _tools(wb: Workbench, args: argparse.Namespace) -> int:
    """`tools`: open the toolbox, report the servers that failed to start, print the tools."""
    toolbox = args.target.split("/")[0]
    box = wb.open(toolbox)
    for reason in box.failed.values():
        print(reason, file=sys.stderr)
    print(repr(wb.tools(args.target)))
    return 0


def _snapshot(wb: Workbench, args: argparse.Namespace) -> int:
    """`snapshot`: write the toolbox's snapshot to the output file (saying so on stderr) or to stdout."""
    surface = wb.snapshot(args.toolbox)
    if args.output:
        surface.save(args.output)
        count = len(surface.servers)
        print(f"{args.output}: {args.toolbox}, {count} server{'' if count == 1 else 's'}", file=sys.stderr)
    else:
        print(surface.to_json(), end="")
    return 0


def _check_schemas(wb: Workbench, args: argparse.Namespace) -> int:
    """`check-schemas`: print the providers' verdicts; 1 when one rejects a schema."""
    report = wb.check_schemas(args.toolbox, providers=args.provider or ("openai", "anthropic", "gemini"))
    print(repr(report))
    return 1 if report.rejected else 0


def _call(wb: Workbench, args: argparse.Namespace) -> int:
    """`call`: call the tool with the JSON arguments, print the result; 1 when it is an error."""
    try:
        arguments = json.loads(args.arguments)
    except ValueError as exc:
        raise WorkbenchError(f"Arguments must be a JSON object: {exc}") from None
    result = wb.call(args.tool, arguments, timeout=args.timeout)
    print(repr(result))
    return 1 if result.is_error else 0


def _doctor(wb: Workbench, args: argparse.Namespace) -> int:
    """`doctor`: print each step of connecting to the server; 1 when one failed."""
    report = wb.doctor(args.target)
    print(repr(report))
    return 0 if report.ok else 1


_WORKBENCH_COMMANDS: dict[str, Callable[[Workbench, argparse.Namespace], int]] = {
    "list": _list,
    "tools": _tools,
    "snapshot": _snapshot,
    "check-schemas": _check_schemas,
    "call": _call,
    "doctor": _doctor,
}
"""The commands run on a `Workbench` of the config (closed after each), by name."""


if __name__ == "__main__":
    sys.exit(main())

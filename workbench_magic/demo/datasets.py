"""The ``datasets`` demo server: three small tables to query, aggregate, profile and plot.

Run it as ``python -m workbench_magic.demo.datasets`` (stdio). It works offline and imports
nothing heavy: the tables are CSV files bundled as package data, read with :mod:`csv`, and
charts are PNGs drawn pixel by pixel in pure Python.

Tools: ``list_datasets``, ``describe_dataset``, ``query``, ``aggregate``, ``plot`` (returns
an image), ``profile`` (reports progress). Resources: ``dataset://index`` and the template
``dataset://{name}`` (the CSV text). Prompt: ``analyze_dataset``.

The client side of MCP (what the server asks of the client, and tells it):

* ``describe_with_model(dataset)`` asks the client's model (sampling) for a paragraph about a
  dataset's columns and returns it;
* ``choose_columns(dataset)`` asks the person (form elicitation: which columns, how many rows)
  and returns those rows, or the action when the person declined or cancelled;
* ``query`` sends log messages (``notifications/message``, logger ``datasets``): ``info`` when it
  starts, ``warning`` when its filter matches no rows. ``logging/setLevel`` is served, so the
  ``logging`` capability is declared;
* completions: the ``name`` of ``dataset://{name}`` and of the prompt ``analyze_dataset``.

Both go through the SDK's resolvers (``Annotated[T, Resolve(fn)]`` where ``fn`` returns ``Sample``
or ``Elicit``), which pick the transport by protocol: on 2025-11-25 a ``sampling/createMessage`` or
``elicitation/create`` request sent to the client mid-call; on 2026-07-28 an
``InputRequiredResult`` that the client answers by calling the tool again with the answer.
"""

from __future__ import annotations

import json
import warnings
from collections import Counter
from collections.abc import Callable
from functools import cache
from typing import Annotated, Any, Literal

import anyio
import mcp_types as types
from mcp.server import MCPServer
from mcp.server.connection import allowed_log_levels
from mcp.server.context import ServerRequestContext
from mcp.server.mcpserver import Context
from mcp.server.mcpserver.exceptions import ResourceNotFoundError
from mcp.server.mcpserver.resolve import AcceptedElicitation, Elicit, ElicitationResult, Resolve, Sample
from mcp.server.mcpserver.utilities.types import Image
from mcp.shared.exceptions import MCPDeprecationWarning, MCPError
from mcp.types import INVALID_PARAMS, ToolAnnotations
from mcp_types import LoggingLevel
from mcp_types.version import MODERN_PROTOCOL_VERSIONS
from pydantic import BaseModel, Field, create_model

from workbench_magic.demo import chart_app
from workbench_magic.demo.drawing import bar_png, scatter_png
from workbench_magic.demo.skills import SkillsFolder
from workbench_magic.demo.tables import DESCRIPTIONS, Cell, ColumnType, DatasetError, Table, load
from workbench_magic.engine.sdk.server import lowlevel_server

INSTRUCTIONS = """\
Small bundled tables for data exploration and teaching: penguins, weather and sales.
Start with list_datasets, then describe_dataset(name) to see columns and types.
query(dataset, columns, where, order_by, descending, limit) filters and sorts rows;
a filter is {"column", "op", "value"} with op one of == != < <= > >= contains.
aggregate(dataset, group_by, metric, agg) groups rows; plot(dataset, x, y, kind) draws a PNG chart;
profile(dataset) describes a table column by column while reporting progress.
describe_with_model(dataset) asks the client's model for a description of a table's columns
(sampling); choose_columns(dataset) asks the user which columns and how many rows to return
(elicitation).
The raw CSV of each table is the resource dataset://{name}."""

mcp: MCPServer = MCPServer(
    "datasets", instructions=INSTRUCTIONS, log_level="WARNING", extensions=[chart_app.apps, SkillsFolder()]
)

READ_ONLY = ToolAnnotations(read_only_hint=True, destructive_hint=False, idempotent_hint=True, open_world_hint=False)


# --------------------------------------------------------------------------- models


class DatasetInfo(BaseModel):
    """One entry of `list_datasets`."""

    name: str
    description: str
    rows: int
    columns: list[str]


class ValueCount(BaseModel):
    """A value of a string column and how often it occurs."""

    value: str
    count: int


class ColumnStats(BaseModel):
    """Summary statistics of one column: min/max/mean for numbers, unique/top for strings."""

    name: str
    type: ColumnType
    non_null: int
    min: float | int | None = None
    max: float | int | None = None
    mean: float | None = None
    unique: int | None = None
    top: list[ValueCount] | None = None


class DatasetDescription(BaseModel):
    """Result of `describe_dataset` and `profile`."""

    name: str
    rows: int
    columns: list[ColumnStats]


class Filter(BaseModel):
    """One condition of a query: ``column op value``."""

    column: str = Field(description="Column to test")
    op: Literal["==", "!=", "<", "<=", ">", ">=", "contains"] = Field(
        description="Comparison; 'contains' is a case-insensitive substring test"
    )
    value: str | float | int | bool | None = Field(
        description="Value to compare with; null matches empty cells with == and !="
    )


class QueryResult(BaseModel):
    """Rows matching a query (at most ``limit``), and how many matched in total."""

    rows: list[dict[str, Cell]]
    total: int


class AggregateResult(BaseModel):
    """One row per group: the group-by columns and the aggregated metric."""

    rows: list[dict[str, Cell]]


class ModelDescription(BaseModel):
    """Result of `describe_with_model`: what the client's model wrote, and which model it was."""

    dataset: str
    model: str
    description: str


class ChosenRows(BaseModel):
    """Result of `choose_columns`: the person's answer and, when accepted, the rows it selects."""

    action: Literal["accept", "decline", "cancel"]
    columns: list[str] = Field(description="The columns chosen (empty unless accepted)")
    rows: list[dict[str, Cell]] = Field(description="The first `limit` rows with those columns")
    total: int = Field(description="Rows in the dataset")


# --------------------------------------------------------------------------- helpers


def _stats(table: Table, column: str) -> ColumnStats:
    """Describe one column of ``table``."""
    values = [row[column] for row in table.rows if row[column] is not None]
    stats = ColumnStats(name=column, type=table.types[column], non_null=len(values))
    if table.is_numeric(column):
        numbers = [v for v in values if isinstance(v, int | float)]
        if numbers:
            stats.min = min(numbers)
            stats.max = max(numbers)
            stats.mean = round(sum(numbers) / len(numbers), 4)
    else:
        counts = Counter(str(v) for v in values)
        stats.unique = len(counts)
        stats.top = [ValueCount(value=v, count=c) for v, c in counts.most_common(5)]
    return stats


def _describe(table: Table) -> DatasetDescription:
    """Describe every column of ``table``."""
    return DatasetDescription(name=table.name, rows=len(table.rows), columns=[_stats(table, c) for c in table.columns])


def _coerce(table: Table, flt: Filter) -> Cell | bool:
    """The filter value converted to the column's type, when that makes sense."""
    value = flt.value
    if value is None or flt.op == "contains" or isinstance(value, bool):
        return value
    if table.is_numeric(flt.column):
        if isinstance(value, str):
            try:
                return float(value)
            except ValueError:
                raise DatasetError(f"Column {flt.column!r} is numeric; cannot compare it with {value!r}") from None
        return value
    return value if isinstance(value, str) else str(value)


def _matcher(table: Table, flt: Filter) -> Callable[[dict[str, Cell]], bool]:
    """A predicate over rows implementing one filter."""
    column = table.check_column(flt.column)
    value = _coerce(table, flt)
    op = flt.op
    if op == "contains":
        needle = "" if value is None else str(value).lower()
        return lambda row: row[column] is not None and needle in str(row[column]).lower()
    if op in ("==", "!="):
        want = op == "=="
        return lambda row: (row[column] == value) == want
    if value is None:
        raise DatasetError(f"Operator {op!r} needs a value, not null")
    compare: Callable[[Any, Any], bool] = {
        "<": lambda a, b: a < b,
        "<=": lambda a, b: a <= b,
        ">": lambda a, b: a > b,
        ">=": lambda a, b: a >= b,
    }[op]

    def match(row: dict[str, Cell]) -> bool:
        cell = row[column]
        if cell is None:
            return False
        try:
            return compare(cell, value)
        except TypeError:
            raise DatasetError(f"Cannot compare column {column!r} with {value!r}") from None

    return match


def _sort_key(value: Cell) -> tuple[int, Any]:
    """Sort key putting ``None`` last and keeping numbers and strings apart."""
    if value is None:
        return (2, 0)
    if isinstance(value, str):
        return (1, value)
    return (0, value)


def _round(value: float) -> float:
    """Round a computed float for display."""
    return round(value, 4)


# --------------------------------------------------------------------------- log messages

LOGGER = "datasets"
"""The logger name of this server's log messages."""
LOG_LEVELS: tuple[LoggingLevel, ...] = ("debug", "info", "notice", "warning", "error", "critical", "alert", "emergency")


class _LogState:
    """The level the client last asked for with ``logging/setLevel`` (2025-11-25 only)."""

    level: LoggingLevel | None = None


async def _log(ctx: Context, level: LoggingLevel, message: str) -> None:
    """Send one log message (``notifications/message``) on this request's own stream.

    On 2026-07-28 a request opts in with the ``io.modelcontextprotocol/logLevel`` key of its
    ``_meta`` and the SDK drops messages below that level; on 2025-11-25 the level is the one of
    the connection's last ``logging/setLevel`` (every level until it sends one).
    """
    threshold = None if ctx.protocol_version in MODERN_PROTOCOL_VERSIONS else _LogState.level
    if threshold is not None and LOG_LEVELS.index(level) < LOG_LEVELS.index(threshold):
        return
    # The notification itself, not `ctx.log`: the SDK marks every logging helper deprecated (the
    # capability is, at 2026-07-28), and their warnings would be the first lines of this log.
    request = ctx.request_context
    if level not in allowed_log_levels(request.protocol_version, request.meta):  # the SDK's gate
        return
    params = types.LoggingMessageNotificationParams(level=level, data=message, logger=LOGGER)
    await request.session.send_notification(
        types.LoggingMessageNotification(params=params), related_request_id=request.request_id
    )


async def _set_level(ctx: ServerRequestContext[Any], params: types.SetLevelRequestParams) -> types.EmptyResult:
    """``logging/setLevel`` (2025-11-25): serving it is what declares the ``logging`` capability."""
    _LogState.level = params.level
    return types.EmptyResult()


# The SDK's MCPServer has no decorator for logging/setLevel: register it on the low-level server.
lowlevel_server(mcp).add_request_handler("logging/setLevel", types.SetLevelRequestParams, _set_level)


# --------------------------------------------------------------------------- tools

DatasetName = Annotated[str, Field(description="Dataset name: penguins, weather or sales")]


@mcp.tool(annotations=READ_ONLY)
def list_datasets() -> list[DatasetInfo]:
    """List the bundled datasets with their size and columns."""
    infos = []
    for name in sorted(DESCRIPTIONS):
        table = load(name)
        infos.append(
            DatasetInfo(name=name, description=DESCRIPTIONS[name], rows=len(table.rows), columns=table.columns)
        )
    return infos


@mcp.tool(annotations=READ_ONLY)
def describe_dataset(name: DatasetName) -> DatasetDescription:
    """Describe a dataset: per column its type, non-null count, and min/max/mean or top values."""
    return _describe(load(name))


@mcp.tool(annotations=READ_ONLY)
async def query(
    dataset: DatasetName,
    ctx: Context,
    columns: Annotated[list[str] | None, Field(description="Columns to return (default: all)")] = None,
    where: Annotated[list[Filter] | None, Field(description="Conditions that must all hold")] = None,
    order_by: Annotated[str | None, Field(description="Column to sort by (empty values last)")] = None,
    descending: Annotated[bool, Field(description="Sort in descending order")] = False,
    limit: Annotated[int, Field(ge=0, le=10_000, description="Maximum number of rows to return")] = 100,
) -> QueryResult:
    """Select rows of a dataset: filter with ``where``, sort with ``order_by``, keep ``columns``.

    ``total`` is the number of matching rows before ``limit`` is applied. Sends an ``info`` log
    message when it starts and a ``warning`` when the conditions match no row.
    """
    conditions = " and ".join(f"{f.column} {f.op} {f.value!r}" for f in where or []) or "every row"
    await _log(ctx, "info", f"query {dataset}: {conditions}, limit {limit}")
    table = load(dataset)
    selected = [table.check_column(c) for c in columns] if columns else list(table.columns)
    matchers = [_matcher(table, f) for f in where or []]
    rows = [row for row in table.rows if all(m(row) for m in matchers)]
    if matchers and not rows:
        await _log(ctx, "warning", f"query {dataset}: no row matches {conditions}")
    if order_by is not None:
        key = table.check_column(order_by)
        present = [r for r in rows if r[key] is not None]
        missing = [r for r in rows if r[key] is None]
        present.sort(key=lambda r: _sort_key(r[key]), reverse=descending)
        rows = present + missing
    return QueryResult(rows=[{c: row[c] for c in selected} for row in rows[:limit]], total=len(rows))


@mcp.tool(annotations=READ_ONLY)
def aggregate(
    dataset: DatasetName,
    group_by: Annotated[list[str], Field(description="Columns to group by (empty: one overall group)")],
    metric: Annotated[str, Field(description="Column to aggregate")],
    agg: Annotated[
        Literal["count", "sum", "mean", "min", "max"],
        Field(description="Aggregation; count counts non-empty values, the others need a numeric column"),
    ] = "mean",
) -> AggregateResult:
    """Group a dataset and aggregate one column per group.

    Each result row holds the group-by columns and ``<metric>_<agg>``, e.g. ``body_mass_g_mean``.
    """
    table = load(dataset)
    keys = [table.check_column(c) for c in group_by]
    table.check_column(metric)
    if agg != "count" and not table.is_numeric(metric):
        raise DatasetError(f"Column {metric!r} is not numeric; use agg='count' or a numeric column")
    groups: dict[tuple[Cell, ...], list[Cell]] = {}
    for row in table.rows:
        groups.setdefault(tuple(row[k] for k in keys), []).append(row[metric])
    out_name = f"{metric}_{agg}"
    result: list[dict[str, Cell]] = []
    for group in sorted(groups, key=lambda g: [_sort_key(v) for v in g]):
        values = [v for v in groups[group] if v is not None]
        numbers = [v for v in values if isinstance(v, int | float)]
        value: Cell
        if agg == "count":
            value = len(values)
        elif not numbers:
            value = None
        elif agg == "sum":
            total = sum(numbers)
            value = total if isinstance(total, int) else _round(total)
        elif agg == "mean":
            value = _round(sum(numbers) / len(numbers))
        elif agg == "min":
            value = min(numbers)
        else:
            value = max(numbers)
        record: dict[str, Cell] = dict(zip(keys, group, strict=True))
        record[out_name] = value
        result.append(record)
    return AggregateResult(rows=result)


@mcp.tool(annotations=READ_ONLY)
def plot(
    dataset: DatasetName,
    x: Annotated[str, Field(description="Column for the x axis (numeric for scatter, any for bar)")],
    y: Annotated[str, Field(description="Numeric column for the y axis")],
    kind: Annotated[
        Literal["scatter", "bar"],
        Field(description="scatter: one dot per row; bar: mean of y for each value of x"),
    ] = "scatter",
) -> Image:
    """Draw a 320x240 PNG chart of two columns of a dataset."""
    table = load(dataset)
    table.check_column(x)
    table.check_column(y)
    if not table.is_numeric(y):
        raise DatasetError(f"Column {y!r} is not numeric; plot needs a numeric y")
    title = f"{y} by {x}" if kind == "bar" else f"{y} vs {x}"
    if kind == "scatter":
        if not table.is_numeric(x):
            raise DatasetError(f"Column {x!r} is not numeric; use kind='bar' for a categorical x")
        points = [
            (float(r[x]), float(r[y]))  # type: ignore[arg-type]
            for r in table.rows
            if r[x] is not None and r[y] is not None
        ]
        png = scatter_png(points, title)
    else:
        sums: dict[Cell, list[float]] = {}
        for r in table.rows:
            if r[x] is not None and r[y] is not None:
                sums.setdefault(r[x], []).append(float(r[y]))  # type: ignore[arg-type]
        bars = [(str(k), sum(v) / len(v)) for k, v in sorted(sums.items(), key=lambda kv: _sort_key(kv[0]))]
        png = bar_png(bars, title)
    return Image(data=png, format="png")


@mcp.tool(annotations=READ_ONLY)
async def profile(
    dataset: DatasetName,
    ctx: Context,
    delay: Annotated[float, Field(ge=0, le=10, description="Seconds to pause after each column")] = 0.05,
) -> DatasetDescription:
    """Describe a dataset column by column, reporting progress after each column.

    Same result as ``describe_dataset``; the pause makes the progress visible.
    """
    table = load(dataset)
    total = len(table.columns)
    stats: list[ColumnStats] = []
    for i, column in enumerate(table.columns):
        await ctx.report_progress(i, total, f"profiling {column}")
        stats.append(_stats(table, column))
        await anyio.sleep(delay)
    await ctx.report_progress(total, total, "done")
    return DatasetDescription(name=table.name, rows=len(table.rows), columns=stats)


# --------------------------------------------------------------------------- sampling and elicitation


def _column_line(table: Table, stats: ColumnStats) -> str:
    """One column of a dataset, described in a line of plain text for a model."""
    missing = len(table.rows) - stats.non_null
    gaps = f", {missing} missing" if missing else ""
    if stats.type == "str":
        examples = ", ".join(v.value for v in stats.top or [])
        return f"- {stats.name}: text, {stats.unique} distinct values (most common: {examples}){gaps}"
    return f"- {stats.name}: {stats.type}, from {stats.min} to {stats.max}, mean {stats.mean}{gaps}"


def description_request(dataset: str) -> Sample:
    """Resolver of `describe_with_model`: one user message with the dataset's columns, for sampling."""
    table = load(dataset)
    lines = [_column_line(table, stats) for stats in _describe(table).columns]
    text = "\n".join(
        [
            f"The dataset {dataset!r} ({DESCRIPTIONS[dataset]}) has {len(table.rows)} rows and these columns:",
            *lines,
            "Describe its columns in one paragraph for someone about to analyze it.",
        ]
    )
    message = types.SamplingMessage(role="user", content=types.TextContent(type="text", text=text))
    return Sample([message], max_tokens=300, system_prompt="You are a concise data analyst.")


def _sampled_text(result: types.CreateMessageResult) -> str:
    """The text of a sampling answer (its content is one block or, on 2025-11-25, a list)."""
    content = result.content if isinstance(result.content, list) else [result.content]
    return "".join(block.text for block in content if isinstance(block, types.TextContent))


@mcp.tool(annotations=READ_ONLY)
async def describe_with_model(
    dataset: DatasetName,
    answer: Annotated[types.CreateMessageResult, Resolve(description_request)],
) -> ModelDescription:
    """Ask the client's model (sampling) for a one-paragraph description of a dataset's columns.

    The client must support sampling: without it the call fails, naming the missing capability.
    """
    return ModelDescription(dataset=dataset, model=answer.model, description=_sampled_text(answer))


DEFAULT_ROWS = 5
"""The row limit `choose_columns` offers by default."""


@cache
def choice_form(dataset: str) -> type[BaseModel]:
    """The form `choose_columns` asks for `dataset`: a multi-select of its columns and a row limit."""
    table = load(dataset)
    column: Any = Literal.__getitem__(tuple(table.columns))  # one of the dataset's columns
    return create_model(
        f"{dataset.capitalize()}Choice",
        columns=(
            list[column],
            Field(min_length=1, title="Columns", description=f"Columns of {dataset} to keep"),
        ),
        limit=(
            int,
            Field(default=DEFAULT_ROWS, ge=1, le=len(table.rows), title="Rows", description="How many rows"),
        ),
    )


def columns_question(dataset: str) -> Elicit[BaseModel]:
    """Resolver of `choose_columns`: the form elicitation."""
    return Elicit(f"Which columns of {dataset!r} do you want, and how many rows?", choice_form(dataset))


@mcp.tool(annotations=READ_ONLY)
async def choose_columns(
    dataset: DatasetName,
    choice: Annotated[ElicitationResult[BaseModel], Resolve(columns_question)],
) -> ChosenRows:
    """Ask the user which columns and how many rows of a dataset they want (elicitation), and return them.

    ``action`` is the user's answer: ``accept`` (with the rows), ``decline`` or ``cancel`` (no rows).
    """
    table = load(dataset)
    if not isinstance(choice, AcceptedElicitation):
        return ChosenRows(action=choice.action, columns=[], rows=[], total=len(table.rows))
    answer = choice.data.model_dump()
    columns = [table.check_column(c) for c in answer["columns"]]
    rows = [{c: row[c] for c in columns} for row in table.rows[: answer["limit"]]]
    return ChosenRows(action="accept", columns=columns, rows=rows, total=len(table.rows))


# --------------------------------------------------------------------------- resources and prompt


@mcp.resource("dataset://index", name="index", mime_type="application/json")
def dataset_index() -> str:
    """The names of the bundled datasets, as a JSON array."""
    return json.dumps(sorted(DESCRIPTIONS))


@mcp.resource("dataset://{name}", name="dataset", mime_type="text/csv")
def dataset_csv(name: str) -> str:
    """The CSV text of one dataset."""
    if name not in DESCRIPTIONS:
        raise ResourceNotFoundError(f"Unknown dataset {name!r}. Available datasets: {', '.join(sorted(DESCRIPTIONS))}")
    return load(name).text


# For each dataset: a column to group by, a metric, and an (x, y) pair worth a scatter plot.
_SUGGESTIONS: dict[str, tuple[str, str, str, str]] = {
    "penguins": ("species", "body_mass_g", "flipper_length_mm", "body_mass_g"),
    "weather": ("city", "temp_c", "temp_c", "precip_mm"),
    "sales": ("region", "revenue", "units", "revenue"),
}


@mcp.prompt()
def analyze_dataset(name: Annotated[str, Field(description="Dataset to analyze")]) -> str:
    """Ask for an exploratory analysis of one dataset, using this server's tools."""
    if name not in DESCRIPTIONS:
        raise MCPError(
            INVALID_PARAMS, f"Unknown dataset {name!r}. Available datasets: {', '.join(sorted(DESCRIPTIONS))}"
        )
    table = load(name)
    numeric = [c for c in table.columns if table.is_numeric(c)]
    categorical = [c for c in table.columns if not table.is_numeric(c)]
    group, metric, x, y = _SUGGESTIONS[name]
    return "\n".join(
        [
            f"Please explore the {name!r} dataset ({len(table.rows)} rows): {DESCRIPTIONS[name]}.",
            f"Numeric columns: {', '.join(numeric)}. Categorical columns: {', '.join(categorical)}.",
            f"1. Call describe_dataset(name={name!r}) and point out missing values and unusual ranges.",
            f"2. Compare groups: aggregate(dataset={name!r}, group_by=[{group!r}], metric={metric!r}, "
            f"agg='mean'), then plot(dataset={name!r}, x={group!r}, y={metric!r}, kind='bar').",
            f"3. Look for a relationship: plot(dataset={name!r}, x={x!r}, y={y!r}) and describe the scatter.",
            "Finish with three findings and one question worth investigating further.",
        ]
    )


@mcp.completion()
async def complete(
    ref: types.PromptReference | types.ResourceTemplateReference,
    argument: types.CompletionArgument,
    context: types.CompletionContext | None,
) -> types.Completion | None:
    """Complete dataset names: the ``name`` of ``dataset://{name}`` and of the prompt ``analyze_dataset``."""
    template = isinstance(ref, types.ResourceTemplateReference) and ref.uri == "dataset://{name}"
    prompt = isinstance(ref, types.PromptReference) and ref.name == "analyze_dataset"
    if not (template or prompt) or argument.name != "name":
        return None
    values = [name for name in sorted(DESCRIPTIONS) if name.startswith(argument.value)]
    return types.Completion(values=values, total=len(values), has_more=False)


def main() -> None:
    """Run the server over stdio."""
    # Sampling is deprecated at 2026-07-28 (both eras are served): keep the SDK's own warnings
    # about it (its resolvers use what it deprecates) out of the server's stderr.
    warnings.simplefilter("ignore", MCPDeprecationWarning)
    mcp.run()


if __name__ == "__main__":
    main()

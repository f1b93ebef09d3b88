"""Tool, resource and prompt listings: their descriptions as text and HTML."""

from __future__ import annotations

from workbench_magic.vocabulary.listings import PromptInfo, ResourceInfo, ToolInfo, ToolList, tools_table_html

DOC = "Filter with ``where`` (a <list>), sort with `order_by`; it``s not code.\nSecond ``line``."


def test_rst_literals_show_as_code_in_tool_tables() -> None:
    tools = ToolList([ToolInfo("t", "s", "query", description=DOC)])
    text = repr(tools)
    assert text == "t/s/query  Filter with `where` (a <list>), sort with `order_by`; it``s not code."
    html = tools_table_html(tools)
    assert (
        "<td>Filter with <code>where</code> (a &lt;list&gt;), sort with <code>order_by</code>; it``s not code.</td>"
        in html
    )
    assert tools._repr_html_().count("<code>where</code>") == 1
    assert (
        repr(tools[0]) == "<ToolInfo t/s/query: Filter with `where` (a <list>), sort with `order_by`; it``s not code.>"
    )


def test_a_cut_description_keeps_its_code_whole() -> None:
    long = "x" * 60 + " see ``a_long_name`` here"  # cut after the literal became `a_long_name`
    assert repr(ToolInfo("t", "s", "n", description=long)).endswith(" see `a_l…>")
    assert "``" not in repr(ToolList([ToolInfo("t", "s", "n", description=long)]))


def test_rst_literals_in_resource_and_prompt_reprs() -> None:
    resource = ResourceInfo("t", "s", "x://a", "a", description="The ``a`` resource")
    assert repr(resource) == "<Resource t/s x://a: The `a` resource>"
    prompt = PromptInfo("t", "s", "p", description="Ask about ``name``", arguments=(("name", True, None),))
    assert repr(prompt) == "<Prompt t/s/p(name): Ask about `name`>"

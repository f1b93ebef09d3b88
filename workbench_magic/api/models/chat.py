"""`wb.chat`: a conversation with a model that uses a toolbox's tools, shown in the cell.

A turn is one pydantic-ai agent run over `wb.toolset(toolbox)` with the model `resolve_model`
gives (which records it into cassettes and traces). The run is a coroutine on the workbench loop,
as a call is: its tool calls reach their sessions there, and `wb.chat` waits as `wb.call` does,
running on its own thread what the turn posts back on the call's channel. So the person's side
stays on the thread that made the chat (the kernel's, in a notebook): the model's text as it
streams and each tool call as it starts and ends (the `ChatView` of the workbench's presenters:
the notebook's streams into the cell), and the question asked before a destructive tool runs (the channel's asker:
`input()` while a cell waits).

The agent's part (pydantic-ai) is in chat_agent.py, imported on first use: `import workbench_magic`
imports no framework. What a turn is (`ChatTurn`) is in vocabulary/chat.py.

The conversation (the model messages so far, chat_agent.py's `Conversation`) belongs to the
workbench loop: a turn reads it and replaces it whole when it ends; the turns of one workbench run
one at a time. It keeps the model its last turn was given (`model=`, `--model`): a turn given none
goes on with it, else `chat_model`. `wb.chat_reset()` starts over, and forgets that model.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from workbench_magic.api.asking import waiting_channel
from workbench_magic.vocabulary.chat import ChatToolCall, ChatTurn, ChatUsage, ChatView, checked_prompt
from workbench_magic.vocabulary.errors import UsageError

if TYPE_CHECKING:
    from workbench_magic.api.context import Context
    from workbench_magic.api.models.chat_agent import Conversation
    from workbench_magic.api.toolsets.making import Toolsets
    from workbench_magic.vocabulary.skills import Skill

__all__ = ["Chat", "ChatToolCall", "ChatTurn", "ChatUsage", "ChatView", "TurnSettings"]


# ---- the workbench's part ---------------------------------------------------------------------
@dataclass(frozen=True)
class TurnSettings:
    """What a model's turns (a chat's, an evaluation's runs) read of the workbench, at each turn.

    Attributes:
        resolve: the model that answers, as `resolve_model` gives it for the workbench.
        confirm_destructive: the workbench's `confirm_destructive`.
        tool_retries: the workbench's `tool_retries`.
    """

    resolve: Callable[[Any], Any]
    confirm_destructive: Callable[[], bool]
    tool_retries: Callable[[], int]


class Chat:
    """A workbench's chat with a model over a toolbox: `chat`, `chat_reset`.

    Args:
        context: the workbench's shared context.
        toolsets: the workbench's toolsets (a turn's tools are `toolset(toolbox)`'s).
        skills_named: reads the skills a turn is given (`ServerFeatures.skills_named`).
        settings: what a turn reads of the workbench.
    """

    def __init__(
        self,
        context: Context,
        toolsets: Toolsets,
        skills_named: Callable[..., tuple[Skill, ...]],
        settings: TurnSettings,
    ) -> None:
        self._context = context
        self._toolsets = toolsets
        self._skills_named = skills_named
        self.settings = settings
        self._conversation: Conversation | None = None
        """The conversation so far: the loop's (a turn reads it and replaces its messages when it ends)."""

    def chat(
        self,
        prompt: str,
        *,
        toolbox: str | None = None,
        model: Any = None,
        skills: str | Iterable[str] | None = None,
    ) -> ChatTurn:
        """Ask a model, which may call the toolbox's tools; the turn it answers with.

        The conversation goes on across calls (`chat_reset()` starts over). In a notebook the model's
        text streams into the cell as it comes and each tool call shows as it runs, its result
        rendered as results are. Every tool call is a workbench call (history, traces, cassettes, the
        person's answers to a server's questions). A tool marked `destructiveHint` runs only once the
        person allows it (`input()` where the cell waits), unless `confirm_destructive` is off; a
        refusal is what the model is told instead of a result. A call with bad arguments is told to the
        model as the call's result, and it may call again, `tool_retries` times in a row; past that the
        turn stops, and the `ChatTurn` says so (`.stopped`; the conversation stays as it was). Ctrl-C /
        kernel interrupt stops the turn (the conversation stays as it was; a model that does not return
        is left behind, and the next turn does not wait for it).

        Args:
            prompt: what to ask: non-empty text.
            toolbox: the toolbox (or `toolbox/server`) whose tools the model may call; None: the toolbox
                opened last (or the only one open).
            model: a pydantic-ai `Model` or a `"provider:model"` name, which the conversation then keeps;
                None: the conversation's model (the last one given since `chat_reset`), else `chat_model`
                (a name or a `Model`; `$WORKBENCH_MODEL`).
            skills: skills the model follows this turn: `"toolbox/server/name"` or a list of them. Each is
                read (`skill`, its files checked against their digests) and its `SKILL.md` goes to the model
                as instructions, after the workbench's own.

        Returns:
            The turn: `.text`, `.tool_calls` (each with `.identifier`, `.arguments`, `.result`), `.usage`,
            `.cost`, `.stopped`.

        Raises:
            UsageError: the prompt is not non-empty text; no toolbox is open and none was named; no model is
                set; a skill is not named `toolbox/server/name`.
            NotFoundError: the toolbox named does not exist, or a server lists no such skill.
            SkillDigestError: a skill's file changed since its server's skills were listed.
            MissingExtraError: pydantic-ai is not installed.
            ModelError: the model failed (a provider's error, a usage limit, an answer it could not use):
                `Model 'openai:gpt-4o' failed: <reason>`; the conversation stays as it was.

        Example:
            ```python
            wb.open("demo")
            turn = wb.chat("Which penguin species is heaviest?", model="openai:gpt-5-mini")
            turn.tool_calls[0].result.to_pandas()
            wb.chat("And the lightest?")  # the same conversation
            wb.chat("Clean data.csv", skills="dev/docs/csv-cleaning")  # the model follows the skill
            ```
        """
        prompt = checked_prompt(prompt, "wb.chat")
        target = toolbox if toolbox is not None else self.default_toolbox()
        conversation, kept = self._context.loop.run_sync(self._conversation_and_model)
        resolved = self.settings.resolve(model if model is not None else kept)
        read = self._skills_named(skills)
        from workbench_magic.api.models.chat_agent import Turn

        channel = waiting_channel()
        toolsets = self._toolsets
        turn = Turn(
            lambda **hooks: toolsets.toolset(target, **hooks),
            prompt,
            target,
            resolved,
            channel,
            view=self._context.presenters.view_of_turn(),
            confirm=self.settings.confirm_destructive(),
            skills=read,
            tool_retries=self.settings.tool_retries(),
        )
        return self._context.run(turn.run(conversation, model=model), channel)  # type: ignore[no-any-return]

    def chat_reset(self) -> None:
        """Start the chat over: the next `chat` sends none of the conversation so far, and forgets its model."""

        def reset() -> None:
            if self._conversation is not None:  # none yet: nothing to forget
                self._conversation.reset()

        self._context.loop.run_sync(reset)

    def conversation(self) -> Conversation:
        """The workbench's conversation (made on first use; the loop uses it)."""
        return self._context.loop.run_sync(self._made_conversation)

    def _conversation_and_model(self) -> tuple[Conversation, Any]:
        """The workbench's conversation (made on first use) and the model it keeps, on the loop."""
        conversation = self._made_conversation()
        return conversation, conversation.model

    def _made_conversation(self) -> Conversation:
        if self._conversation is None:
            from workbench_magic.api.models.chat_agent import Conversation

            self._conversation = Conversation()
        return self._conversation

    def default_toolbox(self) -> str:
        """The toolbox a chat uses when none is named: the one opened last."""
        opened = [name for name, box in self._context.core.state.items() if box.open]
        if not opened:
            raise UsageError(
                "No toolbox is open to chat with: open one (wb.open('demo'), %workbench open demo) "
                "or name it (wb.chat(prompt, toolbox='demo'), %%chat demo)"
            )
        return opened[-1]

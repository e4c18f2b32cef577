"""A chat template that renders tools, and the parser that reads tool calls back, for models that ship neither.

SmolLM2's own template prints ``role + content`` and nothing else: TRL's tool loop refuses it (it cannot render a
tool call or a tool's reply). The **Hermes** format (Nous Research's, adopted by Qwen2.5/Qwen3 and most open tool
models) is the widely used alternative: the tools' JSON schemas listed in the system turn, a call written by the
model as ``<tool_call>{"name": ..., "arguments": {...}}</tool_call>``, the reply given back in a user turn as
``<tool_response>...</tool_response>``. :data:`HERMES_TEMPLATE` is Qwen2.5's template (TRL ships it as
``qwen2_5.jinja``) with SmolLM2's default system line instead of Qwen's, so without tools it renders exactly what
SmolLM2's own template renders. Its replies are parsed by TRL's ``qwen3_template`` (the same ``<tool_call>`` JSON).
"""

from __future__ import annotations

from typing import Any

from rlvr.errors import RlvrError

TOOL_TEMPLATES = ("auto", "hermes", "model")
DEFAULT_SYSTEM = "You are a helpful AI assistant named SmolLM, trained by Hugging Face"

HERMES_TEMPLATE = (
    "{%- if tools %}"
    "{{- '<|im_start|>system\\n' }}"
    "{%- if messages[0]['role'] == 'system' %}{{- messages[0]['content'] }}"
    "{%- else %}{{- '" + DEFAULT_SYSTEM + "' }}{%- endif %}"
    "{{- \"\\n\\n# Tools\\n\\nYou may call one or more functions to assist with the user query.\\n\\n"
    "You are provided with function signatures within <tools></tools> XML tags:\\n<tools>\" }}"
    "{%- for tool in tools %}{{- \"\\n\" }}{{- tool | tojson }}{%- endfor %}"
    "{{- \"\\n</tools>\\n\\nFor each function call, return a json object with function name and arguments within "
    "<tool_call></tool_call> XML tags:\\n<tool_call>\\n{\\\"name\\\": <function-name>, \\\"arguments\\\": "
    "<args-json-object>}\\n</tool_call><|im_end|>\\n\" }}"
    "{%- else %}"
    "{%- if messages[0]['role'] == 'system' %}"
    "{{- '<|im_start|>system\\n' + messages[0]['content'] + '<|im_end|>\\n' }}"
    "{%- else %}{{- '<|im_start|>system\\n" + DEFAULT_SYSTEM + "<|im_end|>\\n' }}{%- endif %}"
    "{%- endif %}"
    "{%- for message in messages %}"
    "{%- if (message.role == 'user') or (message.role == 'system' and not loop.first) "
    "or (message.role == 'assistant' and not message.tool_calls) %}"
    "{{- '<|im_start|>' + message.role + '\\n' + message.content + '<|im_end|>' + '\\n' }}"
    "{%- elif message.role == 'assistant' %}"
    "{{- '<|im_start|>' + message.role }}"
    "{%- if message.content %}{{- '\\n' + message.content }}{%- endif %}"
    "{%- for tool_call in message.tool_calls %}"
    "{%- if tool_call.function is defined %}{%- set tool_call = tool_call.function %}{%- endif %}"
    "{{- '\\n<tool_call>\\n{\"name\": \"' }}{{- tool_call.name }}{{- '\", \"arguments\": ' }}"
    "{{- tool_call.arguments | tojson }}{{- '}\\n</tool_call>' }}"
    "{%- endfor %}"
    "{{- '<|im_end|>\\n' }}"
    "{%- elif message.role == 'tool' %}"
    "{%- if (loop.index0 == 0) or (messages[loop.index0 - 1].role != 'tool') %}{{- '<|im_start|>user' }}{%- endif %}"
    "{{- '\\n<tool_response>\\n' }}{{- message.content }}{{- '\\n</tool_response>' }}"
    "{%- if loop.last or (messages[loop.index0 + 1].role != 'tool') %}{{- '<|im_end|>\\n' }}{%- endif %}"
    "{%- endif %}"
    "{%- endfor %}"
    "{%- if add_generation_prompt %}{{- '<|im_start|>assistant\\n' }}{%- endif %}"
)


def fit_tool_template(tokenizer: Any, choice: str = "auto") -> str:
    """Give ``tokenizer`` a template that renders tools and a parser for its tool calls; say which, in words.

    ``auto``: the model's own template where it renders a whole tool exchange (TRL's check), else Hermes;
    ``hermes``: Hermes always; ``model``: the model's own or an error. The Hermes template needs the ChatML
    markers (``<|im_start|>``, ``<|im_end|>``) in the vocabulary, as SmolLM2 and Qwen have them.
    """
    from trl.chat_template_utils import qwen3_template, supports_tool_calling

    if choice not in TOOL_TEMPLATES:
        raise RlvrError(f"model.tool_template must be one of {', '.join(TOOL_TEMPLATES)}, got {choice!r}.")
    own = supports_tool_calling(tokenizer)
    if choice == "model" and not own:
        raise RlvrError("model.tool_template: model, but this model's chat template cannot render tool calls; "
                        "use model.tool_template: hermes (or auto).")
    if choice == "model" or (choice == "auto" and own):
        _add_parser(tokenizer)
        return "the model's own chat template (it renders tools)"
    if not all(marker in tokenizer.get_vocab() for marker in ("<|im_start|>", "<|im_end|>")):
        raise RlvrError("the Hermes tool template needs the <|im_start|>/<|im_end|> tokens, which this tokenizer "
                        "lacks; set model.chat_format: chatml first.")
    tokenizer.chat_template = HERMES_TEMPLATE
    tokenizer.response_template = qwen3_template
    return "Hermes (<tool_call> JSON; the model's own template renders no tools)" if not own else "Hermes"


def _add_parser(tokenizer: Any) -> None:
    from trl.chat_template_utils import add_response_schema

    if getattr(tokenizer, "response_template", None) is None and getattr(tokenizer, "response_schema", None) is None:
        try:
            add_response_schema(tokenizer)
        except ValueError:
            raise RlvrError("this model's chat template renders tools but TRL knows no parser for its tool calls; "
                            "use model.tool_template: hermes.") from None

"""The tool-aware chat template rlvr supplies (Hermes), its parser, and when a recipe gets it."""

import pytest
from trl.chat_template_utils import parse_response, qwen2_5_chat_template, supports_tool_calling

from rlvr.chat_format import apply_chat_format
from rlvr.errors import RlvrError
from rlvr.testing import build_tokenizer
from rlvr.tool_template import HERMES_TEMPLATE, fit_tool_template
from rlvr.tools import calculator

#: SmolLM2-135M-Instruct's own chat template (tokenizer_config.json): it renders no tools.
SMOLLM2_TEMPLATE = (
    "{% for message in messages %}{% if loop.first and messages[0]['role'] != 'system' %}"
    "{{ '<|im_start|>system\nYou are a helpful AI assistant named SmolLM, trained by Hugging Face<|im_end|>\n' }}"
    "{% endif %}{{'<|im_start|>' + message['role'] + '\n' + message['content'] + '<|im_end|>' + '\n'}}{% endfor %}"
    "{% if add_generation_prompt %}{{ '<|im_start|>assistant\n' }}{% endif %}"
)

CALL = {"type": "function", "function": {"name": "calculator", "arguments": {"expression": "979 + 287"}}}
CONVERSATION = [
    {"role": "user", "content": "What is 979 + 287?"},
    {"role": "assistant", "content": "", "tool_calls": [CALL]},
    {"role": "tool", "name": "calculator", "content": "1266"},
    {"role": "assistant", "content": "#### The final answer is 1266"},
]


class _Model:  # what apply_chat_format touches on a model: embeddings and configs
    class config:  # noqa: N801
        pass

    generation_config = None

    def get_input_embeddings(self):
        import torch

        return torch.nn.Embedding(10_000, 2)


def chatml_tokenizer(template=SMOLLM2_TEMPLATE):
    tokenizer = build_tokenizer()
    apply_chat_format(_Model(), tokenizer, "chatml")
    tokenizer.chat_template = template
    return tokenizer


def test_hermes_without_tools_renders_exactly_what_smollm2s_own_template_renders():
    tokenizer = chatml_tokenizer()
    messages = [{"role": "user", "content": "hi"}, {"role": "assistant", "content": "hello"}, {"role": "user", "content": "2+2?"}]
    own = tokenizer.apply_chat_template(messages, tokenize=False, add_generation_prompt=True)
    fit_tool_template(tokenizer)
    assert tokenizer.chat_template == HERMES_TEMPLATE
    assert tokenizer.apply_chat_template(messages, tokenize=False, add_generation_prompt=True) == own


def test_hermes_renders_the_tools_a_call_and_its_reply():
    tokenizer = chatml_tokenizer()
    fit_tool_template(tokenizer)
    text = tokenizer.apply_chat_template(CONVERSATION, tools=[calculator], tokenize=False)
    assert '<tools>\n{"type": "function", "function": {"name": "calculator"' in text
    assert '<tool_call>\n{"name": "calculator", "arguments": {"expression": "979 + 287"}}\n</tool_call><|im_end|>' in text
    assert "<|im_start|>user\n<tool_response>\n1266\n</tool_response><|im_end|>" in text
    assert supports_tool_calling(tokenizer)


def test_hermes_parser_reads_a_call_back_and_plain_text_as_content():
    tokenizer = chatml_tokenizer()
    fit_tool_template(tokenizer)
    prefix = tokenizer.encode(tokenizer.apply_chat_template(CONVERSATION[:1], tokenize=False, add_generation_prompt=True),
                              add_special_tokens=False)
    call = tokenizer.encode('<tool_call>\n{"name": "calculator", "arguments": {"expression": "1 + 2"}}\n</tool_call><|im_end|>',
                            add_special_tokens=False)
    parsed = parse_response(tokenizer, call, prefix=prefix)
    assert parsed["tool_calls"] == [{"type": "function", "function": {"name": "calculator", "arguments": {"expression": "1 + 2"}}}]
    plain = parse_response(tokenizer, tokenizer.encode("#### The final answer is 3<|im_end|>", add_special_tokens=False),
                           prefix=prefix)
    assert plain["content"] == "#### The final answer is 3" and not plain.get("tool_calls")


def test_a_call_opened_for_the_model_is_parsed_from_the_prompt_it_ends():
    tokenizer = chatml_tokenizer()
    fit_tool_template(tokenizer)
    prompt = tokenizer.apply_chat_template(CONVERSATION[:1], tokenize=False, add_generation_prompt=True) + "<tool_call>\n"
    rest = tokenizer.encode('{"name": "calculator", "arguments": {"expression": "1 + 2"}}\n</tool_call><|im_end|>',
                            add_special_tokens=False)
    parsed = parse_response(tokenizer, rest, prefix=tokenizer.encode(prompt, add_special_tokens=False))
    assert parsed["tool_calls"][0]["function"]["arguments"] == {"expression": "1 + 2"}


def test_auto_keeps_a_model_template_that_renders_tools():
    tokenizer = chatml_tokenizer(qwen2_5_chat_template)
    assert "own" in fit_tool_template(tokenizer, "auto")
    assert tokenizer.chat_template == qwen2_5_chat_template
    assert tokenizer.response_template is not None


def test_model_choice_refuses_a_template_that_renders_no_tools():
    with pytest.raises(RlvrError, match="tool_template: hermes"):
        fit_tool_template(chatml_tokenizer(), "model")


def test_hermes_needs_the_chatml_markers():
    with pytest.raises(RlvrError, match="chat_format: chatml"):
        fit_tool_template(build_tokenizer(), "hermes")


def test_an_unknown_tool_template_is_one_line():
    with pytest.raises(RlvrError, match="auto, hermes, model"):
        fit_tool_template(chatml_tokenizer(), "xml")

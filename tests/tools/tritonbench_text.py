"""TritonBench's text conventions, shared by the tools that read its checkout: the 146-'#'
separator between a task's implementation and its test block, and the code of a model's reply
(the last ```python fence when the reply has fences; cut at a separator line when it has one)."""

import re

SEPARATOR = "#" * 146


def implementation(text):
    lines = text.splitlines()
    for i, line in enumerate(lines):
        if line.rstrip() == SEPARATOR:
            return "\n".join(lines[:i]) + "\n"
    return text


def code_of_reply(text):
    fences = re.findall(r"```(?:python|py)?[ \t]*\n(.*?)```", text, re.S)
    return implementation(fences[-1] if fences else text)

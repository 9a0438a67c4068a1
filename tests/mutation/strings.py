"""Which mutants change only words shown to people: a function's code compared with that wording left out."""

from __future__ import annotations

import ast

# A string is text shown to people, and changing it changes nothing the code does, only where it can go nowhere
# else: in what a log call writes, in the message of an exception raised, and in a keyword argument that is a
# post's or a reply's words. Everywhere else a string is logic: a keyword argument's value (`pending="final"`,
# `Post(kind="turn")`), a key (a dict's, a dedupe key built as a positional argument), a compared or returned value,
# what a method is called on (`"".join`) or with (`.split(":")`), a pattern. Within those words, a string the code
# compares, looks up or parses with stays logic, and so does every expression an f-string formats.
_LOGGERS, _LEVELS = {"log", "logger", "logging"}, {"debug", "info", "warning", "error", "exception", "critical"}
_SHOWN = {"text", "title", "message", "hint"}  # keyword arguments that carry what people read
_PARSING = {"startswith", "endswith", "removeprefix", "removesuffix", "partition", "rpartition", "split", "rsplit",
            "replace", "strip", "lstrip", "rstrip", "get", "pop", "setdefault", "index", "find", "count",
            "compile", "sub", "subn", "match", "fullmatch", "search", "findall", "finditer"}


class _Words(ast.NodeTransformer):
    """Blanks the text of strings inside words shown to people; logic inside them stays."""

    def visit_Constant(self, n: ast.Constant) -> ast.AST:
        return ast.Constant(value="") if isinstance(n.value, str | bytes) else n

    def visit_Compare(self, n: ast.Compare) -> ast.AST:
        return n

    def visit_Subscript(self, n: ast.Subscript) -> ast.AST:
        n.value = self.visit(n.value)
        return n

    def visit_Dict(self, n: ast.Dict) -> ast.AST:
        n.values = [self.visit(v) if v is not None else v for v in n.values]
        return n

    def visit_JoinedStr(self, n: ast.JoinedStr) -> ast.AST:
        # its words go, however they are cut; `{n + 1}` in a message is arithmetic and stays
        return ast.JoinedStr(values=[v for v in n.values if isinstance(v, ast.FormattedValue)])

    def visit_Call(self, n: ast.Call) -> ast.AST:
        if isinstance(n.func, ast.Attribute) and n.func.attr in _PARSING:
            return n
        return self.generic_visit(n)


def _blank_strings(node: ast.AST) -> str:
    """A function's code with the words it shows people left out: two that differ only in that wording compare
    equal; any other string is kept, as logic."""
    class Blank(ast.NodeTransformer):
        def visit_Raise(self, n: ast.Raise) -> ast.AST:
            if isinstance(n.exc, ast.Call):
                n.exc.args = [_Words().visit(a) for a in n.exc.args]
                n.exc.keywords = [ast.keyword(arg=k.arg, value=_Words().visit(k.value)) for k in n.exc.keywords]
            return n

        def visit_Call(self, n: ast.Call) -> ast.AST:
            if (isinstance(n.func, ast.Attribute) and isinstance(n.func.value, ast.Name)
                    and n.func.value.id in _LOGGERS and n.func.attr in _LEVELS):
                return ast.Call(func=n.func, args=[], keywords=[])  # a log line, all of it, is a message
            self.generic_visit(n)
            n.keywords = [ast.keyword(arg=k.arg, value=_Words().visit(k.value)) if k.arg in _SHOWN else k
                          for k in n.keywords]
            return n

    copy = Blank().visit(ast.parse(ast.unparse(node)))
    assert isinstance(copy, ast.Module)
    fn = copy.body[0]
    if isinstance(fn, ast.FunctionDef | ast.AsyncFunctionDef):
        fn.name = ""
    return ast.dump(copy)

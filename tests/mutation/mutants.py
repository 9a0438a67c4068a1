"""The mutants mutmut does not make: of module-level constants, of decorated functions, and functions emptied."""

from __future__ import annotations

import ast

# Module-level rules (a compiled pattern, a limit, a table of words) are outside every function, where mutmut
# never mutates. Each constant in a module-level or class-level assignment is mutated here as mutmut would mutate it
# in a function (a string wrapped in "XX", a number moved by one, a truth flipped), and the row's tests run against
# each: killed when they fail.
TOP_PREFIX = "<module>."


def _constant_mutations(value: object) -> list[object]:
    if isinstance(value, bool):
        return [not value]
    if isinstance(value, int | float):
        return [value + 1]
    if isinstance(value, str) and value:
        return [f"XX{value}XX"]
    return []


# Calls that name a thing for the type checker or the logs, not a rule: their strings are never mutated.
_DECLARING = {"TypeVar", "NewType", "ParamSpec", "getLogger"}


def _declaration(value: ast.expr) -> bool:
    func = value.func if isinstance(value, ast.Call) else None
    return isinstance(func, ast.Name | ast.Attribute) and (
        func.id if isinstance(func, ast.Name) else func.attr) in _DECLARING


def module_level_mutants(source: str) -> list[tuple[str, str]]:
    """Each mutant of the module's top-level and class-level assignments: (its name, the module's source with it).
    A docstring is no rule and is left alone."""
    tree = ast.parse(source)
    lines = source.splitlines(keepends=True)
    offsets = [0]
    for line in lines:
        offsets.append(offsets[-1] + len(line))
    out: list[tuple[str, str]] = []

    def assignments(body: list[ast.stmt], owner: str) -> None:
        for stmt in body:
            if isinstance(stmt, ast.ClassDef):
                assignments(stmt.body, f"{owner}{stmt.name}.")
            elif (isinstance(stmt, ast.Assign | ast.AnnAssign) and stmt.value is not None
                  and not _declaration(stmt.value)):
                targets = stmt.targets if isinstance(stmt, ast.Assign) else [stmt.target]
                name = owner + "_".join(ast.unparse(t) for t in targets)
                for i, node in enumerate(n for n in ast.walk(stmt.value) if isinstance(n, ast.Constant)):
                    last, last_col = node.end_lineno or node.lineno, node.end_col_offset or 0
                    for changed in _constant_mutations(node.value):
                        start = offsets[node.lineno - 1] + len(
                            lines[node.lineno - 1].encode()[:node.col_offset].decode())
                        end = offsets[last - 1] + len(lines[last - 1].encode()[:last_col].decode())
                        out.append((f"{TOP_PREFIX}{name}__const_{i + 1}",
                                    source[:start] + repr(changed) + source[end:]))

    assignments(tree.body, "")
    return out


# mutmut leaves a decorated function alone (its copies would run the decorator again): a cached lookup, a context
# manager, a property. Those are mutated here, with mutmut's main operators: a constant changed as above, a
# comparison turned to its neighbour or its negation, `and` and `or` swapped, a `not` dropped, `+` and `-` swapped.
DECORATED_PREFIX = "<decorated>."
_SWAPS: dict[type, type] = {ast.Lt: ast.LtE, ast.LtE: ast.Lt, ast.Gt: ast.GtE, ast.GtE: ast.Gt, ast.Eq: ast.NotEq,
                            ast.NotEq: ast.Eq, ast.In: ast.NotIn, ast.NotIn: ast.In, ast.Is: ast.IsNot,
                            ast.IsNot: ast.Is, ast.And: ast.Or, ast.Or: ast.And, ast.Add: ast.Sub, ast.Sub: ast.Add}


def _decorated(tree: ast.Module) -> list[tuple[str, ast.FunctionDef | ast.AsyncFunctionDef]]:
    out = []
    for node in tree.body:
        members = [(node.name + ".", m) for m in node.body] if isinstance(node, ast.ClassDef) else [("", node)]
        for owner, fn in members:
            if isinstance(fn, ast.FunctionDef | ast.AsyncFunctionDef) and fn.decorator_list and not (
                    len(fn.decorator_list) == 1 and isinstance(fn.decorator_list[0], ast.Name)
                    and fn.decorator_list[0].id in ("staticmethod", "classmethod")):
                out.append((owner + fn.name, fn))
    return out


def decorated_mutants(source: str) -> list[tuple[str, str]]:
    """Each mutant of the module's decorated functions: (its name, the module's source with it)."""
    lines = source.splitlines(keepends=True)
    out: list[tuple[str, str]] = []
    for name, fn in _decorated(ast.parse(source)):
        first, last = fn.decorator_list[0].lineno - 1, fn.end_lineno or fn.lineno
        indent = " " * fn.col_offset
        body = [n for stmt in fn.body[1 if ast.get_docstring(fn) else 0:] for n in ast.walk(stmt)]
        count = 0
        for index, node in enumerate(body):
            changes: list[object] = []
            if isinstance(node, ast.Constant):
                changes = _constant_mutations(node.value)
            elif isinstance(node, ast.Compare | ast.BoolOp | ast.BinOp) and type(
                    node.ops[0] if isinstance(node, ast.Compare) else node.op) in _SWAPS:
                changes = ["swap"]
            elif isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.Not):
                changes = ["drop"]
            for change in changes:
                copy = ast.parse(source)
                target = dict(_decorated(copy))[name]
                mutated = [n for stmt in target.body[1 if ast.get_docstring(target) else 0:] for n in ast.walk(stmt)]
                _apply(mutated[index], change, target)
                count += 1
                text = "".join(indent + line + "\n" for line in ast.unparse(target).splitlines())
                out.append((f"{DECORATED_PREFIX}{name}#{count}", "".join(lines[:first]) + text + "".join(lines[last:])))
    return out


# A function whose body mutmut has no operator for (`return [LEAD]`) would leave its row short of it: the tool then
# empties it, so that it returns None, and the row's tests must notice.
EMPTIED_PREFIX = "<emptied>."


def _members(tree: ast.Module) -> dict[str, ast.FunctionDef | ast.AsyncFunctionDef]:
    out: dict[str, ast.FunctionDef | ast.AsyncFunctionDef] = {}
    for node in tree.body:
        members = [(node.name + ".", m) for m in node.body] if isinstance(node, ast.ClassDef) else [("", node)]
        out |= {owner + fn.name: fn for owner, fn in members if isinstance(fn, ast.FunctionDef | ast.AsyncFunctionDef)}
    return out


def emptied_mutants(source: str, names: list[str]) -> list[tuple[str, str]]:
    """For each named function (`f`, `Class.method`), the module's source with its body (its docstring kept) made
    `return None`."""
    lines = source.splitlines(keepends=True)
    out: list[tuple[str, str]] = []
    for name in names:
        fn = _members(ast.parse(source)).get(name)
        if fn is None:
            continue
        first = (fn.decorator_list[0].lineno if fn.decorator_list else fn.lineno) - 1
        fn.body = [*fn.body[:1 if ast.get_docstring(fn) else 0], ast.Return(ast.Constant(None))]
        text = "".join(" " * fn.col_offset + line + "\n" for line in ast.unparse(fn).splitlines())
        out.append((f"{EMPTIED_PREFIX}{name}", "".join(lines[:first]) + text + "".join(lines[fn.end_lineno or 0:])))
    return out


def _apply(node: ast.AST, change: object, fn: ast.AST) -> None:
    if isinstance(node, ast.Constant):
        node.value = change  # type: ignore[assignment]  # one of `_constant_mutations`
    elif isinstance(node, ast.Compare):
        node.ops[0] = _SWAPS[type(node.ops[0])]()
    elif isinstance(node, ast.BoolOp | ast.BinOp):
        node.op = _SWAPS[type(node.op)]()
    elif isinstance(node, ast.UnaryOp):  # `not x` becomes `x`: its parent takes the operand in its place
        for parent in ast.walk(fn):
            for field, value in ast.iter_fields(parent):
                if value is node:
                    setattr(parent, field, node.operand)
                elif isinstance(value, list) and node in value:
                    value[value.index(node)] = node.operand

# SPDX-License-Identifier: MIT
"""The public surface: a docstring on every public name, and type stubs (__init__.pyi, shipped with
py.typed) that declare each with the runtime's parameters."""

import ast
import inspect
import os

import txattn


def stub():
    path = os.path.join(os.path.dirname(txattn.__file__), "__init__.pyi")
    assert os.path.exists(os.path.join(os.path.dirname(path), "py.typed"))
    with open(path) as f:
        return ast.parse(f.read())


def public_members():
    for name in txattn.__all__:
        obj = getattr(txattn, name)
        yield name, obj
        if inspect.isclass(obj) and not issubclass(obj, BaseException):
            for member, value in vars(obj).items():
                if not member.startswith("_") or member == "__call__":
                    yield f"{name}.{member}", value


def test_every_public_name_has_a_docstring():
    for name, obj in public_members():
        doc = getattr(obj, "__doc__", None) if not isinstance(obj, property) else obj.fget.__doc__
        assert doc and doc.strip(), f"{name} has no docstring"
    assert txattn.__doc__ and "threads" in txattn.__doc__.lower()


def stub_params(node):
    a = node.args
    return ([x.arg for x in a.posonlyargs + a.args], [x.arg for x in a.kwonlyargs])


def runtime_params(fn, drop_self=False):
    sig = inspect.signature(fn)
    pos = [p.name for p in sig.parameters.values()
           if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    kw = [p.name for p in sig.parameters.values() if p.kind == p.KEYWORD_ONLY]
    return (["self"] if drop_self else []) + pos, kw


def test_stubs_declare_the_runtime_signatures():
    tree = stub()
    declared = {}
    for node in tree.body:
        if isinstance(node, ast.FunctionDef):
            declared.setdefault(node.name, node)
        elif isinstance(node, ast.ClassDef):
            declared[node.name] = node
            for sub in node.body:
                if isinstance(sub, ast.FunctionDef):
                    declared.setdefault(f"{node.name}.{sub.name}", sub)
    for name in txattn.__all__:
        assert name in declared, f"{name} is missing from __init__.pyi"
    for name, obj in public_members():
        if name not in declared or not isinstance(declared[name], ast.FunctionDef):
            continue
        if inspect.isfunction(obj) or inspect.isbuiltin(obj):  # C functions: text signatures
            assert stub_params(declared[name]) == runtime_params(obj), f"{name}: stub differs"
    assert stub_params(declared["Context.__init__"]) == runtime_params(txattn.Context, True)
    for name in ("attention", "reference", "error_bound", "default_context"):
        assert inspect.isbuiltin(getattr(txattn, name)), f"{name}: the C function, for speed"


def test_the_readme_snippet_runs():
    """The README's Python lines, as a user would paste them."""
    torch = __import__("pytest").importorskip("torch")
    readme = os.path.join(os.path.dirname(__file__), "..", "..", "README.md")
    with open(readme) as f:
        text = f.read()
    snippet = text.split("```python\n", 1)[1].split("```", 1)[0]
    assert len(snippet.strip().splitlines()) == 3
    scope = {}
    exec(compile(snippet, "README.md", "exec"), scope)
    o, q = scope["o"], scope["q"]
    assert isinstance(o, torch.Tensor) and o.shape == q.shape

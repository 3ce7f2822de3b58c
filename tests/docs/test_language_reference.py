"""docs/language.md is what docs/tools/gen_language.py writes from the docstrings (so it
cannot drift), and every public nl function has an entry with an example."""
import importlib.util
import os

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def _generator():
    spec = importlib.util.spec_from_file_location(
        "gen_language", os.path.join(ROOT, "docs", "tools", "gen_language.py"))
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def test_language_md_is_generated_from_the_docstrings():
    gen = _generator()
    with open(gen.TARGET) as f:
        on_disk = f.read()
    assert on_disk == gen.render(), ("docs/language.md is stale: run "
                                     "`python docs/tools/gen_language.py --write`")


def test_every_public_function_has_an_entry_and_an_example():
    import npujit.language as nl
    gen = _generator()
    text = gen.render()
    names = gen.public_callables()
    assert {"load", "store", "dot", "range", "where", "sum"} <= set(names)
    no_example = [n for n in names if not gen.has_example(getattr(nl, n))]
    assert not no_example, f"public nl functions without an Example:: in their docstring: " \
                           f"{no_example}"
    for n in names:
        heading = f"### `nl.{n}" + ("`" if n in gen.VALUE_TYPES else "(")
        assert heading in text, f"nl.{n} has no entry in docs/language.md"


def test_a_function_without_an_example_is_caught():
    gen = _generator()

    def documented():
        """Does a thing.

        Example::

            y = f(x)
        """

    def undocumented():
        """Does a thing, no example."""

    assert gen.has_example(documented) and not gen.has_example(undocumented)

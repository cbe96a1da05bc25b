"""Write a notebook from a list of cells: a small authoring aid for solutions/ masters.

    from scripts.nbbuild import build
    build("solutions/01_chunking.ipynb", [("md", "# Title"), ("code", "N = 10", ["parameters"]), ...],
          quick={"N": 2})

Cells are (kind, source) or (kind, source, tags); kind is "md" or "code". `quick` becomes
`metadata.agentic_rag.quick_parameters`. Cell ids are stable (c000, c001, …) so rebuilding gives
small diffs. Afterwards run `python -m checks.exercises` to regenerate the learner copy.
"""

import nbformat


def build(path, cells, quick=None, title=""):
    nb = nbformat.v4.new_notebook()
    nb.metadata = {"kernelspec": {"name": "python3", "display_name": "Python 3 (ipykernel)", "language": "python"},
                   "language_info": {"name": "python"},
                   "agentic_rag": {"quick_parameters": quick or {}}}
    for c in cells:
        kind, src = c[0], c[1].strip("\n")
        tags = list(c[2]) if len(c) > 2 else []
        if kind == "md":
            cell = nbformat.v4.new_markdown_cell(src)
        else:
            cell = nbformat.v4.new_code_cell(src)
            if tags: cell.metadata["tags"] = tags
        nb.cells.append(cell)
    for i, cell in enumerate(nb.cells):
        cell["id"] = f"c{i:03d}"
    nbformat.validate(nb)
    nbformat.write(nb, path)

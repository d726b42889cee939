from conftest import open_in_lab, run_all_cells, write_notebook, WIDGET_ERROR


def test_plain_widget_renders(page, lab, server_root, artifacts):
    write_notebook(server_root, "smoke.ipynb", [
        "import ipywidgets as w\nw.IntSlider(value=7, description='smoke-probe')",
    ])
    open_in_lab(page, lab, "smoke.ipynb")
    run_all_cells(page)
    page.locator(".widget-slider").first.wait_for(timeout=20_000)
    page.screenshot(path=str(artifacts / "smoke.png"))
    assert page.get_by_text("smoke-probe").count() == 1
    assert page.get_by_text(WIDGET_ERROR).count() == 0

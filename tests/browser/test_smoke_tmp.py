import time
from conftest import open_in_lab, run_all_cells, write_notebook, WIDGET_ERROR


def test_debug(page, lab, server_root, artifacts):
    write_notebook(server_root, "smoke0.ipynb", [
        "import ipywidgets as w\nw.IntSlider(value=7, description='smoke-probe')",
    ])
    open_in_lab(page, lab, "smoke0.ipynb")
    t = time.time()
    print("prompt", page.locator(".jp-InputPrompt").first.inner_text())
    page.locator(".lm-MenuBar-item", has_text="Run").first.click()
    page.screenshot(path=str(artifacts / "d1.png"))
    item = page.locator(".lm-Menu-item[data-command='runmenu:run-all']:not(.lm-mod-disabled)")
    print(item.count())
    item.click()
    for i in range(20):
        print(time.time()-t, page.locator(".jp-InputPrompt").first.inner_text(), page.locator(".jp-Notebook-ExecutionIndicator").first.get_attribute("data-status"), page.locator(".lm-Menu").count())
        page.wait_for_timeout(500)
    page.screenshot(path=str(artifacts / "d2.png"))
    assert 0

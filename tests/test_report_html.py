"""The HTML report: self-contained, opens offline, and shows its plots in a real headless browser."""

from __future__ import annotations

import dataclasses
import html
import html.parser
import os
import shutil
from pathlib import Path

import browser
import numpy as np
from PIL import Image
from real_data import DATA, slowed_diff, slowed_item

from kernelgate.measure.results import Measurement
from kernelgate.report import html as report_html
from kernelgate.report import publish
from kernelgate.verdict import diff

RED = (0xCF, 0x22, 0x2E)


class Links(html.parser.HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.links: list[str] = []
        self.tags: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.append(tag)
        self.links += [v or "" for k, v in attrs if k in {"src", "href", "xlink:href", "srcset", "action"}]


def parse(text: str) -> Links:
    links = Links()
    links.feed(text)
    return links


def test_self_contained_nothing_fetched_no_script() -> None:
    text = report_html.render([slowed_diff()])
    page = parse(text)
    assert "script" not in page.tags and "link" not in page.tags and "img" not in page.tags
    assert page.tags.count("svg") == 2  # per-layer deltas and where the total moved
    assert all(link.startswith("#") for link in page.links), [x for x in page.links if not x.startswith("#")]
    assert f'content="{report_html.CSP}"' in html.unescape(text) and "default-src 'none'" in report_html.CSP


def test_history_plot_appears_with_older_baselines() -> None:
    item = slowed_item()
    older: tuple[tuple[str, Measurement], ...] = (("2026-11-01-abc1234", item.base),)
    d = publish.build_diffs([publish.Item(item.comparison, item.base, item.current, older)], Path("."), None)
    text = report_html.render(d)
    assert parse(text).tags.count("svg") == 3
    assert "2026-11-01-abc1234" in text and "<h3>History</h3>" in text


def test_trace_links_are_relative(tmp_path: Path) -> None:
    item = slowed_item()
    trace = DATA / "yolov8n-fp16-h200-2steps.trace.json.gz"
    item = publish.Item(item.comparison, item.base, item.current, base_trace=trace, current_trace=trace)
    publish.publish([item], tmp_path)
    links = [x for x in parse((tmp_path / "report.html").read_text()).links if not x.startswith("#")]
    assert links == [
        "traces/yolov8n-fp16-bs1-640.baseline.pt.trace.json.gz",
        "traces/yolov8n-fp16-bs1-640.current.pt.trace.json.gz",
    ]
    assert all((tmp_path / link).is_file() for link in links)


def red_pixels(png: Path) -> int:
    with Image.open(png) as image:
        pixels = np.asarray(image.convert("RGB"), dtype=np.int16)
    return int((np.abs(pixels - np.array(RED)) < 24).all(axis=2).sum())


def test_renders_in_headless_chromium_with_a_screenshot(tmp_path: Path) -> None:
    chromium = browser.find()
    publish.publish([slowed_item()], tmp_path / "report")
    page = tmp_path / "report" / "report.html"
    rendered = browser.dom(chromium, page, tmp_path / "profile-dom")
    assert rendered.count("<svg") == 2 and "model.2" in rendered
    png = tmp_path / "report.png"
    browser.screenshot(chromium, page, png, tmp_path / "profile-shot", (1100, 1900))
    with Image.open(png) as image:
        assert image.size == (1100, 1900)
    # The regressed bar of model.2 and the total's bar in the waterfall are drawn in red: thousands
    # of pixels; the page without its plots has only the FAIL badges and a few numbers in red.
    with_plots = red_pixels(png)
    bare = tmp_path / "bare.html"
    text = page.read_text()
    bare.write_text(text[: text.index("<svg")] + text[text.rindex("</svg>") + 6 :])
    browser.screenshot(chromium, bare, tmp_path / "bare.png", tmp_path / "profile-bare", (1100, 1900))
    without = red_pixels(tmp_path / "bare.png")
    print(f"red pixels: {with_plots} with the plots, {without} without")
    assert with_plots > without + 5000
    print(f"screenshot of the HTML report: {png}")
    keep = os.environ.get("KERNELGATE_SCREENSHOT_DIR")
    if keep:
        Path(keep).mkdir(parents=True, exist_ok=True)
        shutil.copy(png, Path(keep) / "example-report.png")


def test_where_the_time_goes_and_the_layer_groups() -> None:
    text = report_html.render([slowed_diff()])
    assert "where the time goes<b>launch-bound</b>" in text
    assert "GPU busy 1.274 ms (29 %) + host 3.136 ms" in text and "baseline 29 %, launch-bound" in text
    assert "GPU time per layer group:\nbackbone +18.6 %, neck +0.0 %, head -0.0 %, preprocess -0.1 %" in text
    assert '<tr><td>backbone</td><td class="n">540.0 µs</td>\n<td class="n">640.2 µs</td>' in text


def test_a_cpu_run_names_cpu_ops_not_the_gpu() -> None:
    d = slowed_diff()
    text = report_html.render([diff.build(d.comparison, cpu_record(d.base), cpu_record(d.current))])
    assert "CPU ops 1.274 ms (29 %)" in text and "overhead-bound" in text
    assert "CPU op time per layer group" in text
    assert "GPU busy" not in text.split("<h2>")[1].split("<h3>")[0]  # the cards of the benchmark


def cpu_record(m: Measurement) -> Measurement:
    return dataclasses.replace(m, device="cpu")


def open_details(page: Path) -> Path:
    """The report with every collapsed section open (as a reader who opened them sees it)."""
    opened = page.with_name("opened.html")
    opened.write_text(page.read_text().replace("<details>", "<details open>"), encoding="utf-8")
    return opened


def test_the_report_reads_390_and_1440_px_wide_and_names_break_only_at_scopes_and_arguments(
    tmp_path: Path,
) -> None:
    """In Chromium: at 390 px (a phone) and 1440 px, the page never scrolls sideways, a table box
    scrolls only where one piece of a kernel name is wider than the box, and kernel names wrap only
    after ``::``, ``<`` or ``,``; at 390 px most of them wrap. Screenshots of both widths, every
    section open, with KERNELGATE_SCREENSHOT_DIR (docs/report-390.png, docs/report-1440.png)."""
    chromium = browser.find()
    publish.publish([slowed_item()], tmp_path / "report")
    page = tmp_path / "report" / "report.html"
    for width in (390, 1440):
        found = browser.layout(chromium, page, width, tmp_path / f"profile-{width}")
        print(f"{width} px: {found}")
        assert found["viewport"] == width and found["page"] <= width
        assert found["pieces"] > 300 and found["names"] >= 26  # the kernels of model.2 and the cells above
        assert found["split"] == [] and found["bad_breaks"] == [] and found["boxes"] == []
        if width == 390:
            assert found["wrapped"] >= found["names"] // 2
    keep = os.environ.get("KERNELGATE_SCREENSHOT_DIR")
    if keep:
        for width, height in ((390, 4200), (1440, 2600)):
            png = tmp_path / f"report-{width}.png"
            browser.screenshot(chromium, open_details(page), png, tmp_path / f"shot-{width}", (width, height))
            with Image.open(png) as image:  # a palette of 256 colours: a third of the bytes, same look
                image.convert("RGB").quantize(256).save(Path(keep) / png.name, optimize=True)


def test_kernel_names_are_pieces_that_break_after_scopes_template_brackets_and_commas() -> None:
    text = str(report_html.breakable("at::native::k<c10::Half, float> & x"))
    assert text == (
        '<span class="nb">at::</span><wbr><span class="nb">native::</span><wbr><span class="nb">k&lt;</span>'
        '<wbr><span class="nb">c10::</span><wbr><span class="nb">Half,</span><wbr>'
        '<span class="nb"> float&gt; &amp; x</span>'
    )
    assert str(report_html.wbr("a::b, c<d")) == "a::<wbr>b,<wbr> c&lt;<wbr>d"

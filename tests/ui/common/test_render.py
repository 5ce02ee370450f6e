"""Rendering helpers of the dashboard: escaping, badges, a folded passage, an image caption."""

from __future__ import annotations

import math

from mmbright_core.ui.common.render import escape_md, judgment_badge, points, score_text


def test_render_helpers_escape_and_format():
    assert escape_md("*x* <b>") == r"\*x\* \<b\>"
    assert judgment_badge(2.0).startswith(":green-badge[relevant · 2")
    assert "unjudged" in judgment_badge(math.nan)
    assert "excluded" in judgment_badge(1.0, excluded=True)
    assert points(0.12345) == "12.3" and points(math.nan) == "–"
    assert score_text(None) == "–"


def test_a_passage_is_shown_folded_and_escaped():
    from streamlit.testing.v1 import AppTest

    def page() -> None:
        from mmbright_core.ui.common import render

        render.show_passage("<b>bold</b> & <script>alert(1)</script>\n" + "x" * 5000)

    at = AppTest.from_function(page).run()
    (body,) = [e.proto.body for e in at.get("html")]
    assert body.startswith("<details><summary>Passage text</summary>")
    assert "&lt;b&gt;bold&lt;/b&gt; &amp; &lt;script&gt;" in body
    assert "<script>" not in body and "<b>" not in body
    assert body.count("x") < 5000  # cut to the passage limit


def test_an_image_caption_is_escaped_and_wraps_only_between_names():
    from streamlit.testing.v1 import AppTest

    def page() -> None:
        import io

        from PIL import Image

        from mmbright_core.ui.common import render

        out = io.BytesIO()
        Image.new("RGB", (874, 380), "white").save(out, format="PNG")
        render.show_image(out.getvalue(), 'a<b>"/q_1/image_1.png', 360, full_key="full")

    at = AppTest.from_function(page).run()
    (body,) = [e.proto.body for e in at.get("html")]
    assert 'title="a&lt;b&gt;&quot;/q_1/image_1.png"' in body
    assert ">a&lt;b&gt;&quot;/<wbr>q_1/<wbr>image_1.png</div>" in body  # no break inside a name
    at.button(key="full").click().run()
    # The dialog names the picture's own size: it is drawn at that size (up to the window).
    assert "874 × 380 px" in [c.value for c in at.caption]


def test_a_one_pixel_image_says_why_it_shows_nothing():
    from streamlit.testing.v1 import AppTest

    def page() -> None:
        from mmbright_core.data.sources import open_source
        from mmbright_core.ui.common import render

        # The demo's Task 3 corpus holds a 1 x 1 PNG, as the dataset may.
        path = "askubuntu/askubuntu_44962fc7_5560/image_1.png"
        data = open_source("demo").document_image_bytes("askubuntu", path)
        render.show_image(data, path, 360)

    at = AppTest.from_function(page).run()
    assert not at.exception
    assert [c.value for c in at.caption] == [
        "1 × 1 px: too small to show anything. It is the dataset's own image, shown at its "
        "own size; retrievers read it as it is."
    ]

"""mkdocs-llmstxt's preprocess hook: what the Markdown copies of the
pages keep that its HTML-to-Markdown conversion would lose.

A formula is MathML on the site; converted tag by tag, 10^9 would read
"109". Each formula becomes its TeX source instead, from the alttext
that course/build/mathml.py writes: inline code for an inline formula,
a `math` code block for a display one, so that no backslash is escaped.
"""


def preprocess(soup, output):
    for math in soup.find_all("math"):
        tex = math.get("alttext", "")
        if not tex:
            raise ValueError(f"{output}: a formula without alttext: {math}")
        code = soup.new_tag("code")
        code.string = tex
        if math.get("display") == "block":
            pre = soup.new_tag("pre", attrs={"class": ["language-math"]})
            pre.append(code)
            code = pre
        math.replace_with(code)

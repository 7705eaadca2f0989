package reviewui

import (
	"context"
	"testing"

	"github.com/chromedp/chromedp"
)

// contrastJS walks every visible element that shows text of its own (a
// non-blank text node, or a form control's value) and measures the WCAG
// 2.x contrast ratio of its computed color against its effective
// background: the background colors of it and its ancestors composited
// over the white canvas, the text color's own alpha blended on top. Text
// is large at 24px, or 18.66px (14pt) when bold; it needs 3:1, other text
// 4.5:1. SVG text (drawn with fill, in the comparison's forest plot) is
// left out: its color is not CSS color. It returns the failures, each
// naming the element, its text, the ratio and the colors.
const contrastJS = `(function () {
  function rgba(s) {
    var m = s.match(/rgba?\(([^)]+)\)/);
    if (!m) { return null; }
    var p = m[1].split(/[\s,\/]+/).filter(Boolean).map(Number);
    return { r: p[0], g: p[1], b: p[2], a: p.length > 3 ? p[3] : 1 };
  }
  function over(top, under) {
    var a = top.a;
    return { r: top.r * a + under.r * (1 - a), g: top.g * a + under.g * (1 - a), b: top.b * a + under.b * (1 - a), a: 1 };
  }
  function lum(c) {
    function ch(v) { v = v / 255; return v <= 0.03928 ? v / 12.92 : Math.pow((v + 0.055) / 1.055, 2.4); }
    return 0.2126 * ch(c.r) + 0.7152 * ch(c.g) + 0.0722 * ch(c.b);
  }
  function background(el) {
    var chain = [];
    for (var e = el; e && e.nodeType === 1; e = e.parentElement) { chain.push(e); }
    var bg = { r: 255, g: 255, b: 255, a: 1 };
    for (var i = chain.length - 1; i >= 0; i--) {
      var c = rgba(getComputedStyle(chain[i]).backgroundColor);
      if (c && c.a > 0) { bg = over(c, bg); }
    }
    return bg;
  }
  function name(el) {
    var s = el.tagName.toLowerCase();
    if (el.id) { s += "#" + el.id; }
    if (el.className && typeof el.className === "string") { s += "." + el.className.trim().split(/\s+/).join("."); }
    if (el.parentElement) { s = name1(el.parentElement) + " > " + s; }
    return s;
  }
  function name1(el) {
    var s = el.tagName.toLowerCase();
    if (el.className && typeof el.className === "string") { s += "." + el.className.trim().split(/\s+/).join("."); }
    return s;
  }
  var out = [], checked = 0;
  document.querySelectorAll("body *").forEach(function (el) {
    if (el.closest("svg") || el.closest("head")) { return; }
    var own = "";
    if (/^(INPUT|TEXTAREA|SELECT)$/.test(el.tagName)) {
      if (el.type === "checkbox" || el.type === "radio" || el.type === "hidden") { return; }
      own = el.value || el.placeholder || (el.tagName === "SELECT" && el.selectedOptions.length ? el.selectedOptions[0].text : "");
    } else {
      el.childNodes.forEach(function (n) { if (n.nodeType === 3) { own += n.textContent; } });
    }
    if (!own.trim()) { return; }
    var st = getComputedStyle(el);
    var r = el.getBoundingClientRect();
    if (st.visibility === "hidden" || st.display === "none" || r.width === 0 || r.height === 0 || r.right <= 0 || r.bottom <= 0 || el.getClientRects().length === 0) { return; }
    var bg = background(el);
    var fg = rgba(st.color);
    if (!fg) { out.push(name(el) + ": unreadable color " + st.color); return; }
    fg = over(fg, bg);
    var l1 = lum(fg), l2 = lum(bg);
    var ratio = (Math.max(l1, l2) + 0.05) / (Math.min(l1, l2) + 0.05);
    var size = parseFloat(st.fontSize), bold = parseInt(st.fontWeight, 10) >= 700;
    var large = size >= 24 || (size >= 18.66 && bold);
    var need = large ? 3 : 4.5;
    checked++;
    if (ratio < need) {
      out.push(name(el) + " " + JSON.stringify(own.trim().slice(0, 40)) + ": " + ratio.toFixed(2) + ":1 < " + need + ":1 (color " + st.color + " on " +
        "rgb(" + Math.round(bg.r) + ", " + Math.round(bg.g) + ", " + Math.round(bg.b) + "), " + size + "px" + (bold ? " bold" : "") + ")");
    }
  });
  return { checked: checked, failures: out };
})()`

type contrastResult struct {
	Checked  int      `json:"checked"`
	Failures []string `json:"failures"`
}

// tabStepJS tags the element that has the focus with its position in the
// document's focusable controls and reports it, with whether it shows a
// focus style: an outline of some width, or a box shadow. Radio buttons
// of one group are one Tab stop (arrows move within it): they count as
// reached when one of them is.
const tabStepJS = `(function () {
  var e = document.activeElement;
  if (!e || e === document.body) { return { key: "", visible: false }; }
  var st = getComputedStyle(e);
  var visible = (st.outlineStyle !== "none" && parseFloat(st.outlineWidth) > 0) || st.boxShadow !== "none";
  var key = e.tagName + "|" + (e.type === "radio" ? "radio:" + e.name : (e.id || e.name || e.getAttribute("href") || e.textContent.trim().slice(0, 30)));
  return { key: key, visible: visible };
})()`

// focusKeysJS is tabStepJS's key of every focusable control, in document
// order, radio groups once.
const focusKeysJS = `(function () {
  var seen = {}, out = [];
  Array.from(document.querySelectorAll("a[href], button, input, select, textarea, [tabindex]")).forEach(function (e) {
    if (e.disabled || e.type === "hidden" || (e.hasAttribute("tabindex") && e.tabIndex < 0)) { return; }
    var st = getComputedStyle(e);
    if (st.visibility === "hidden" || st.display === "none" || e.getClientRects().length === 0) { return; }
    var key = e.tagName + "|" + (e.type === "radio" ? "radio:" + e.name : (e.id || e.name || e.getAttribute("href") || e.textContent.trim().slice(0, 30)));
    if (!seen[key]) { seen[key] = true; out.push(key); }
  });
  return out;
})()`

type tabStep struct {
	Key     string `json:"key"`
	Visible bool   `json:"visible"`
}

// checkContrast fails the test for every text element of the page below
// the WCAG AA contrast ratio.
func checkContrast(t *testing.T, ctx context.Context, view string) {
	t.Helper()
	res := val(t, ctx, view+": contrast", chromedp.Evaluate[contrastResult](contrastJS))
	if res.Checked < 5 {
		t.Errorf("%s: only %d text elements measured: the walk found no page", view, res.Checked)
	}
	for _, f := range res.Failures {
		t.Errorf("%s: contrast: %s", view, f)
	}
}

// checkKeyboard tabs through the page from its top and fails the test
// unless every focusable control is reached, in document order, each
// with a visible focus style. A page with more controls than maxTabs is
// checked over its first maxTabs.
func checkKeyboard(t *testing.T, ctx context.Context, view string) {
	t.Helper()
	const maxTabs = 120
	want := val(t, ctx, view+": focusables", chromedp.Evaluate[[]string](focusKeysJS))
	if len(want) == 0 {
		t.Fatalf("%s: no focusable control", view)
	}
	want = want[:min(len(want), maxTabs)]
	val(t, ctx, view+": blur", chromedp.Evaluate[bool](`(document.activeElement && document.activeElement.blur(), window.scrollTo(0, 0), true)`))
	// The browser also stops on a scrollable region (a long pre): such
	// stops are not in want, and must show their focus too.
	wanted := map[string]bool{}
	for _, k := range want {
		wanted[k] = true
	}
	var got []string
	seen := map[string]bool{}
	for i := 0; i < 2*len(want)+20 && len(got) < len(want); i++ {
		do(t, ctx, view+": tab", chromedp.KeyEvent("\t"))
		s := val(t, ctx, view+": focus", chromedp.Evaluate[tabStep](tabStepJS))
		if s.Key == "" || seen[s.Key] {
			continue
		}
		seen[s.Key] = true
		if wanted[s.Key] {
			got = append(got, s.Key)
		}
		if !s.Visible {
			t.Errorf("%s: %s has the keyboard focus without a visible focus style", view, s.Key)
		}
	}
	for i := range want {
		if i >= len(got) {
			t.Errorf("%s: the keyboard reached %d of %d controls; not %s and after", view, len(got), len(want), want[i])
			break
		}
		if got[i] != want[i] {
			t.Errorf("%s: Tab %d reaches %s, want %s (document order)", view, i+1, got[i], want[i])
			break
		}
	}
}

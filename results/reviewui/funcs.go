package reviewui

import (
	"encoding/json"
	"fmt"
	"html/template"
	"strings"
	"time"
)

var funcs = template.FuncMap{
	// trusted marks HTML the report wrote (results/report escapes every
	// value it prints): only the comparison body and its style go through.
	"trustedReport": func(s string) template.HTML { return template.HTML(s) }, //nolint:gosec // escaped by results/report
	"trustedStyle":  func(s string) template.CSS { return template.CSS(s) },   //nolint:gosec // a constant of results/report
	"pretty":        prettyJSON,
	"trialURL":      trialPath,
	"sweepURL":      sweepPath,
	"caseURL":       caseLink,
	"join":          strings.Join,
	"when":          func(t time.Time) string { return t.UTC().Format("2006-01-02 15:04:05 MST") },
	"pct":           func(f float64) string { return fmtNum(f, true) },
	"num":           func(f float64) string { return fmtNum(f, false) },
	"plusOne":       func(i int) int { return i + 1 },
	"targetLabel":   func(t string) string { return strings.Replace(t, ":", " ", 1) },
	"list3":         func() []string { return []string{"true", "false", "untested"} },
	"statuses":      func() []string { return []string{"pass", "fail", "not_tested"} },
	"contains": func(xs []int, x int) bool {
		for _, v := range xs {
			if v == x {
				return true
			}
		}
		return false
	},
}

// prettyJSON indents stored JSON for reading; text that is not JSON is
// shown as it is. The result is text: the template escapes it.
func prettyJSON(raw any) string {
	var b []byte
	switch v := raw.(type) {
	case json.RawMessage:
		b = v
	case string:
		b = []byte(v)
	case []byte:
		b = v
	default:
		return fmt.Sprint(v)
	}
	var out strings.Builder
	var parsed any
	if json.Unmarshal(b, &parsed) != nil {
		return string(b)
	}
	enc := json.NewEncoder(&out)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	if enc.Encode(parsed) != nil {
		return string(b)
	}
	return strings.TrimRight(out.String(), "\n")
}

func fmtNum(f float64, percent bool) string {
	if f != f { // NaN
		return "undefined"
	}
	if percent {
		return fmt.Sprintf("%.0f%%", 100*f)
	}
	return fmt.Sprintf("%.2f", f)
}

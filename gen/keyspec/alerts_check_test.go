package keyspec

import "testing"

// What promtool 2.42 accepts and refuses as an input series and its values
// (tried with promtool test rules).
var (
	promtoolSeries = []string{"a", "a{}", `a{b="c"}`, `a{b="c",}`, `a{b="c",d="e"}`, `a{b='c'}`, "a{b=`c`}",
		`{__name__="a"}`, `{b="c"}`, `a:b{c="d"}`, `a{ b = "c" }`, `a{b="c\"d"}`, `a{b="é"}`, `a{b="\u00e9"}`, `a{le="+Inf"}`, `a{b="}"}`}
	promtoolRefusesSeries = []string{`a{b!="c"}`, `a{b=~"c"}`, `a {b="c"}`, `a{b="c}`, `a{b=c}`, "1a", "a b", `a{"b"="c"}`, `a{b="c"} x`, `a{b="\q"}`, "{}", `a{b="c" d="e"}`}
	promtoolValues        = []string{"1", "_x3", "stale", "1+2x3", "1-2x3", "-1x3", "+1x3", "1e3x2", "Inf", "-Inf", "NaN", "inf", "1.5+0.5x3", ".5x2", "1 _ 2", "2x20 0x20", "{{schema:0 sum:1 count:1}}"}
	promtoolRefusesValues = []string{"stalex3", "1+2", "0x1F", "1x", "x3", "1+-2x3", "1++2x3", "1x3x4", "1_000", "1 2 3,", "_+1x3", "1+_x3", "abc"}
)

// What promtool 2.42 accepts as an input series, its values and a PromQL
// expression's brackets, luagen accepts too (and refuses what it refuses, in
// TestAlertErrors): its checks name the spec line, never a valid input.
func TestAlertChecksAcceptWhatPromtoolAccepts(t *testing.T) {
	for _, s := range promtoolSeries {
		if err := checkSeries(s); err != nil {
			t.Errorf("series %s: %v", s, err)
		}
	}
	for _, s := range promtoolRefusesSeries {
		if checkSeries(s) == nil {
			t.Errorf("series %s is accepted (promtool refuses it)", s)
		}
	}
	for _, v := range promtoolValues {
		if err := checkSeriesValues(v); err != nil {
			t.Errorf("values %s: %v", v, err)
		}
	}
	for _, v := range promtoolRefusesValues {
		if checkSeriesValues(v) == nil {
			t.Errorf("values %s are accepted (promtool refuses them)", v)
		}
	}
	for _, e := range []string{`sum(rate(a{b="(["}[5m])) > 0`, "a # a comment (\n> 1", "a{b=`]`}", `a{b='\''}`, `label_replace(a, "x", "$1", "y", "(.*)")`} {
		code, err := exprCode(e)
		if err == nil {
			err = checkBrackets(code)
		}
		if err != nil {
			t.Errorf("expr %s: %v", e, err)
		}
	}
}

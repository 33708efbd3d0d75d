package wire

import (
	"fmt"
	"math"
	"strings"
	"testing"
)

func TestCheckRangesFloats(t *testing.T) {
	usd := math.NaN()
	type budgetSetParams struct {
		Glob string   `json:"glob"`
		USD  *float64 `json:"usd,omitempty" range:"0,1000000"`
	}
	for _, c := range []struct {
		p    any
		want string
	}{
		{&budgetSetParams{Glob: "x", USD: &usd}, "usd is NaN: give a finite number from 0 to 1e+06"},
		{RunParams{Path: "x", BudgetUSD: math.Inf(1)}, "budgetUsd is +Inf"},
		{&RunParams{Path: "x", BudgetUSD: 2e6}, "budgetUsd is 2e+06, out of range: it must be 0 to 1e+06"},
	} {
		if err := CheckRanges("m", c.p); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want %q", fmt.Sprintf("%+v", c.p), err, c.want)
		}
	}
	if err := CheckRanges("m", RunParams{Path: "x", BudgetUSD: 2.5}); err != nil {
		t.Fatal(err)
	}
}

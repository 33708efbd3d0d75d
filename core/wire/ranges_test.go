package wire

import (
	"fmt"
	"math"
	"reflect"
	"strings"
	"testing"
)

// The range tags are literals (a tag cannot name a constant); this holds them to the
// constants role files, config and the CLI use, so the two cannot drift apart.
func TestRangeTagsMatchTheSharedBounds(t *testing.T) {
	for _, c := range []struct {
		typ   any
		field string
		hi    int64
	}{
		{RunParams{}, "HardTimeoutSeconds", MaxTimeoutSeconds},
		{RunParams{}, "SoftTimeoutSeconds", MaxTimeoutSeconds},
		{RunParams{}, "MaxTurns", MaxTurns},
		{RunParams{}, "BudgetUSD", MaxUSD},
		{RunParams{}, "Priority", MaxPriority},
		{RunStartParams{}, "Coders", MaxCoders},
		{RunStartParams{}, "CheckTimeoutSeconds", MaxTimeoutSeconds},
		{BudgetSetParams{}, "USD", MaxUSD},
		{BudgetSetParams{}, "Tokens", MaxTokens},
		{SelectParams{}, "Priority", MaxPriority},
	} {
		f, _ := reflect.TypeOf(c.typ).FieldByName(c.field)
		if _, hi, ok := fieldRange(f); !ok || hi != c.hi {
			t.Errorf("%T.%s: range tag %q, want the upper bound %d", c.typ, c.field, f.Tag.Get("range"), c.hi)
		}
	}
}

func TestCheckRangesFloats(t *testing.T) {
	usd := math.NaN()
	for _, c := range []struct {
		p    any
		want string
	}{
		{&BudgetSetParams{Glob: "x", USD: &usd}, "usd is NaN: give a finite number from 0 to 1e+06"},
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

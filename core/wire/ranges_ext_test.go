package wire_test

import (
	"reflect"
	"testing"

	acctapi "orcr/accounts/api"
	"orcr/core/wire"
	runapi "orcr/orchestrate/run/api"
)

// The range tags are literals (a tag cannot name a constant); this holds them to the
// constants role files, config and the CLI use, so the two cannot drift apart.
func TestRangeTagsMatchTheSharedBounds(t *testing.T) {
	for _, c := range []struct {
		typ   any
		field string
		hi    int64
	}{
		{wire.RunParams{}, "HardTimeoutSeconds", wire.MaxTimeoutSeconds},
		{wire.RunParams{}, "SoftTimeoutSeconds", wire.MaxTimeoutSeconds},
		{wire.RunParams{}, "MaxTurns", wire.MaxTurns},
		{wire.RunParams{}, "BudgetUSD", wire.MaxUSD},
		{wire.RunParams{}, "Priority", wire.MaxPriority},
		{runapi.RunStartParams{}, "Coders", wire.MaxCoders},
		{runapi.RunStartParams{}, "CheckTimeoutSeconds", wire.MaxTimeoutSeconds},
		{acctapi.BudgetSetParams{}, "USD", wire.MaxUSD},
		{acctapi.BudgetSetParams{}, "Tokens", wire.MaxTokens},
		{acctapi.SelectParams{}, "Priority", wire.MaxPriority},
	} {
		f, _ := reflect.TypeOf(c.typ).FieldByName(c.field)
		if _, hi, ok := wire.FieldRange(f); !ok || hi != c.hi {
			t.Errorf("%T.%s: range tag %q, want the upper bound %d", c.typ, c.field, f.Tag.Get("range"), c.hi)
		}
	}
}

package orchestrate_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"orcr/core"
	"orcr/core/wire"
	"orcr/orchestrate"
	"orcr/planning"
	"orcr/store"
)

// The daemon hands orchestrate the server's store; core.Store must satisfy Store.
var _ orchestrate.Store = core.Store(nil)

func openStore(t *testing.T, dir string) *store.Store {
	t.Helper()
	st, err := store.Open(dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	return st
}

func TestPlansInTheRealStore(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	st := openStore(t, dir)
	plans := orchestrate.NewPlans(st)

	r := newRecord(t)
	if err := plans.Create(ctx, r); err != nil {
		t.Fatal(err)
	}
	if err := plans.Create(ctx, r); !errors.Is(err, orchestrate.ErrPlanExists) || !strings.Contains(err.Error(), "pick another name") {
		t.Fatalf("second create: %v", err)
	}
	other, _ := orchestrate.NewRecord("auth", "add login", "/w/app", "codex:gpt-6-sol", t0)
	if err := plans.Create(ctx, other); err != nil {
		t.Fatal(err)
	}
	if _, err := plans.Get(ctx, "nope"); !errors.Is(err, wire.ErrNotFound) || !strings.Contains(err.Error(), "orcr plan ls") {
		t.Fatalf("missing plan: %v", err)
	}
	got, acts, err := plans.Apply(ctx, "csv-import", orchestrate.TurnEnded{File: good}, t0.Add(1))
	if err != nil || got.State != orchestrate.PlanDrafted || len(acts) != 1 {
		t.Fatalf("apply: %+v %v %v", got, acts, err)
	}
	if _, _, err := plans.Apply(ctx, "auth", orchestrate.Approve{File: good}, t0); !errors.Is(err, orchestrate.ErrTransition) {
		t.Fatalf("refused request: %v", err)
	}
	if r, _ := plans.Get(ctx, "auth"); r.State != orchestrate.PlanDrafting || len(r.Events) != 1 {
		t.Fatalf("a refused request was stored: %+v", r)
	}
	if _, err := plans.Update(ctx, "csv-import", func(r *orchestrate.Record) { r.LeadID = "019a-lead"; r.Name = "renamed" }); err != nil {
		t.Fatal(err)
	}
	if err := st.Close(); err != nil {
		t.Fatal(err)
	}

	// Everything survives a restart of the store.
	st = openStore(t, dir)
	defer st.Close()
	plans = orchestrate.NewPlans(st)
	list, err := plans.List(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, r := range list {
		names = append(names, r.Name)
	}
	if !slices.Equal(names, []string{"auth", "csv-import"}) {
		t.Fatalf("list %v", names)
	}
	got, err = plans.Get(ctx, "csv-import")
	if err != nil || got.State != orchestrate.PlanDrafted || got.LeadID != "019a-lead" || got.FileHash != "aaaa" || len(got.Events) != 2 || !got.Created.Equal(t0) {
		t.Fatalf("after reopen: %+v %v", got, err)
	}
	if err := plans.Delete(ctx, "auth"); err != nil {
		t.Fatal(err)
	}
	if list, _ := plans.List(ctx); len(list) != 1 {
		t.Fatalf("after delete: %d plans", len(list))
	}

	// A record from a newer orcr is refused, not half-read.
	if err := st.Put(ctx, orchestrate.PlansBucket, "future", []byte(`{"v":2,"plan":{"name":"future"}}`)); err != nil {
		t.Fatal(err)
	}
	if _, err := plans.Get(ctx, "future"); err == nil || !strings.Contains(err.Error(), "upgrade orcr") {
		t.Fatalf("newer record: %v", err)
	}
	if _, err := plans.List(ctx); err == nil {
		t.Fatal("list read a newer record without complaint")
	}
}

// filePlan is a valid plan named p; its M2 has `tier: medium` at line 18.
const filePlan = `# Plan: p
request: r
check: go test ./...

## M1 · One
depends: -
tier: high
estimate: 20m

### Goal
Do one.

### Acceptance
- [ ] one works

## M2 · Two
depends: M1
tier: medium

### Goal
Do two.

### Acceptance
- [ ] two works
`

func TestReadPlanFile(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "p.md")
	if fs := orchestrate.ReadPlanFile(path, planning.Options{}); !fs.Missing || fs.OK() {
		t.Fatalf("missing: %+v", fs)
	}
	src := []byte(filePlan)
	if err := os.WriteFile(path, src, 0o600); err != nil {
		t.Fatal(err)
	}
	fs := orchestrate.ReadPlanFile(path, planning.Options{Name: "p"})
	if !fs.OK() || fs.Hash != planning.HashBytes(src) || fs.Milestones != 2 {
		t.Fatalf("good: %+v", fs)
	}
	if err := os.WriteFile(path, []byte(strings.Replace(filePlan, "tier: medium", "tier: huge", 1)), 0o600); err != nil {
		t.Fatal(err)
	}
	fs = orchestrate.ReadPlanFile(path, planning.Options{})
	if fs.OK() || len(fs.Errors) != 1 || fs.Errors[0] != path+`:18: unknown tier "huge": tiers are small, medium, high` {
		t.Fatalf("broken: %+v", fs)
	}
	// Unreadable (a directory where the file should be; chmod does not stop root).
	if err := os.Remove(path); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(path, 0o700); err != nil {
		t.Fatal(err)
	}
	fs = orchestrate.ReadPlanFile(path, planning.Options{})
	if fs.OK() || fs.Missing || len(fs.Errors) != 1 || !strings.Contains(fs.Errors[0], "cannot read") {
		t.Fatalf("unreadable: %+v", fs)
	}
}

package wait

import (
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"
)

func TestScale(t *testing.T) {
	for _, c := range []struct {
		env  string
		want time.Duration
	}{{"", 10 * time.Second}, {"3", 30 * time.Second}, {"0.5", 5 * time.Second}, {"0", 10 * time.Second}, {"-2", 10 * time.Second}, {"x", 10 * time.Second}} {
		t.Setenv(ScaleEnv, c.env)
		if got := Scale(10 * time.Second); got != c.want {
			t.Errorf("%s=%q: Scale(10s) = %s, want %s", ScaleEnv, c.env, got, c.want)
		}
	}
}

// TestUntilScales: a condition that holds only after 150 ms is missed by a 50 ms wait
// and caught by the same wait with the factor 10.
func TestUntilScales(t *testing.T) {
	t.Setenv(ScaleEnv, "1") // scripts/test sets a factor for the whole suite
	start := time.Now()
	late := func() bool { return time.Since(start) > 150*time.Millisecond }
	if Until(50*time.Millisecond, late) {
		t.Fatal("a 50 ms wait saw a condition that holds after 150 ms")
	}
	t.Setenv(ScaleEnv, "10")
	start = time.Now()
	if !Until(50*time.Millisecond, late) {
		t.Fatalf("with %s=10 a 50 ms wait did not last 500 ms", ScaleEnv)
	}
}

// TestForSaysWhat: a wait that runs out fails naming what it waited for and the
// time it really had.
func TestForSaysWhat(t *testing.T) {
	t.Setenv(ScaleEnv, "2")
	rec := &recorder{TB: t}
	done := make(chan struct{})
	go func() {
		defer close(done)
		For(rec, 10*time.Millisecond, "the moon", func() bool { return false })
	}()
	<-done
	if !strings.Contains(rec.msg, "20ms") || !strings.Contains(rec.msg, "waiting for the moon") {
		t.Fatalf("failure %q, want the scaled time and what it waited for", rec.msg)
	}
}

// recorder keeps a Fatalf's message and ends the goroutine as Fatalf does.
type recorder struct {
	testing.TB
	msg string
}

func (r *recorder) Helper() {}

func (r *recorder) Fatalf(format string, args ...any) {
	r.msg = fmt.Sprintf(format, args...)
	runtime.Goexit()
}

// TestEveryScalesAndPollsSteadily: Every does not back off (at interval 0 it checks
// back to back, where Until would check about five times in 50 ms), and its deadline
// scales like Until's.
func TestEveryScalesAndPollsSteadily(t *testing.T) {
	n := 0
	if Every(50*time.Millisecond, 0, func() bool { n++; return false }) {
		t.Fatal("Every reported a condition that never held")
	}
	if n < 100 {
		t.Fatalf("%d checks in 50 ms at interval 0, want them back to back", n)
	}
	t.Setenv(ScaleEnv, "10")
	start := time.Now()
	if !Every(50*time.Millisecond, time.Millisecond, func() bool { return time.Since(start) > 150*time.Millisecond }) {
		t.Fatalf("with %s=10 a 50 ms Every did not last 500 ms", ScaleEnv)
	}
}

// TestHeldIsCapped: a held wait grows with the factor up to HoldMax and no further,
// and a factor below 1 does not shorten it.
func TestHeldIsCapped(t *testing.T) {
	for _, c := range []struct {
		env  string
		want time.Duration
	}{{"", 3 * time.Second}, {"1.5", 4500 * time.Millisecond}, {"2", 6 * time.Second}, {"6", 6 * time.Second}, {"12", 6 * time.Second}, {"0.5", 3 * time.Second}, {"x", 3 * time.Second}} {
		t.Setenv(ScaleEnv, c.env)
		if got := Held(3 * time.Second); got != c.want {
			t.Errorf("%s=%q: Held(3s) = %s, want %s", ScaleEnv, c.env, got, c.want)
		}
	}
}

// TestNeverRunsTheHeldWindowAndFailsOnAHold: Never lasts its held window (not the
// scaled one) when the condition never holds, and fails naming what happened when it
// holds late in the window.
func TestNeverRunsTheHeldWindowAndFailsOnAHold(t *testing.T) {
	t.Setenv(ScaleEnv, "20")
	start := time.Now()
	Never(t, 100*time.Millisecond, "nothing", func() bool { return false })
	if took := time.Since(start); took < 200*time.Millisecond || took >= 2*time.Second {
		t.Fatalf("Never of 100 ms at factor 20 took %s, want its held window of 200 ms, not the scaled 2 s", took)
	}
	rec := &recorder{TB: t}
	done := make(chan struct{})
	start = time.Now()
	go func() {
		defer close(done)
		Never(rec, 100*time.Millisecond, "the bell rang", func() bool { return time.Since(start) > 150*time.Millisecond })
	}()
	<-done
	if !strings.Contains(rec.msg, "the bell rang within 200ms") {
		t.Fatalf("failure %q, want what happened and the held window", rec.msg)
	}
}

// Created sees a file made before it is called, one made while it waits (woken by the
// kernel: well before a 10 s timeout), and gives up on one never made.
func TestCreated(t *testing.T) {
	dir := t.TempDir()
	before := filepath.Join(dir, "before")
	if err := os.WriteFile(before, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := Created(before, time.Second); err != nil {
		t.Fatal(err)
	}
	later := filepath.Join(dir, "later")
	go func() {
		time.Sleep(50 * time.Millisecond)
		os.WriteFile(filepath.Join(dir, "other"), nil, 0o600)
		time.Sleep(50 * time.Millisecond)
		os.WriteFile(later, nil, 0o600)
	}()
	t0 := time.Now()
	if err := Created(later, 10*time.Second); err != nil {
		t.Fatal(err)
	}
	if d := time.Since(t0); d > 5*time.Second {
		t.Fatalf("seen after %v", d)
	}
	if err := Created(filepath.Join(dir, "never"), 100*time.Millisecond); err == nil {
		t.Fatal("a file never made was seen")
	}
}

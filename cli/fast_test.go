package cli_test

import (
	"bytes"
	"context"
	"encoding/json"
	"math"
	"math/rand/v2"
	"os"
	"reflect"
	"strings"
	"testing"
	"time"

	"0orcr/fast"

	"orcr/cli"
	"orcr/core"
	"orcr/core/wire"
)

// recorder is the transport the full command line is given to see which request it
// makes: it keeps the first call and refuses it, so nothing runs. It is the
// observation point of the comparison of the two argument parsers, not a server.
type recorder struct {
	methods []string
	params  [][]byte
}

func (r *recorder) Call(_ context.Context, method string, params, _ any) error {
	b, _ := json.Marshal(params)
	r.methods, r.params = append(r.methods, method), append(r.params, b)
	return &wire.Error{Code: wire.CodeUnavailable, Message: "recorded"}
}

func (r *recorder) Open(context.Context, string, any, any) (wire.ClientStream, error) {
	return nil, &wire.Error{Code: wire.CodeUnavailable, Message: "recorded"}
}

// fullRequest is the request the full command line makes for args, if any.
func fullRequest(t *testing.T, args []string) *recorder {
	t.Helper()
	r := &recorder{}
	var out, errb bytes.Buffer
	cli.Run(context.Background(), args, cli.Options{Stdin: strings.NewReader(""), Stdout: &out, Stderr: &errb,
		Connect: func(context.Context) (wire.Transport, error) { return r, nil }})
	return r
}

// sameJSON reports whether a and b are the same JSON value.
func sameJSON(t *testing.T, a, b []byte) bool {
	t.Helper()
	var x, y any
	if err := json.Unmarshal(a, &x); err != nil {
		t.Fatalf("%s: %v", a, err)
	}
	if err := json.Unmarshal(b, &y); err != nil {
		t.Fatalf("%s: %v", b, err)
	}
	return reflect.DeepEqual(x, y)
}

// checkFastParse fails when the fast path claims args and the full command line
// would make another request for them (or none).
func checkFastParse(t *testing.T, args []string) {
	t.Helper()
	c, ok := fast.Parse(args, os.Getenv, os.Getwd)
	if !ok {
		return
	}
	var params any = c.Get
	if c.Run != nil {
		params = c.Run
	}
	if c.List != nil {
		params = c.List
	}
	mine, err := json.Marshal(params)
	if err != nil {
		t.Fatal(err)
	}
	// The fast path asks for the accounts when the login warning needs them, as the
	// full command line does (the recorder refuses that call: no warning, and the run
	// is made all the same).
	var want []string
	if c.Run != nil {
		fast.LoginWarning(c.Run.Provider, c.Run.Account, c.Run.Env, func() ([]fast.Account, bool) {
			want = append(want, "account.list")
			return nil, false
		})
	}
	want = append(want, c.Method)
	r := fullRequest(t, args)
	if !reflect.DeepEqual(r.methods, want) || !sameJSON(t, r.params[len(r.params)-1], mine) {
		t.Fatalf("%q: the fast path makes %v with %s; the full command line made %v, the last with %s",
			args, want, mine, r.methods, r.params)
	}
}

var fastSeeds = [][]string{
	{"get", "demo/a"}, {"get", "--json", "demo/a"}, {"get", "demo/a", "--json"}, {"get", "01a2"},
	{"get", "demo/a", "--explain"}, {"get", "--explain", "--json", "x"}, {"get", "--explain", "x", "--explain"}, {"get", "--explain=true", "x"}, {"get", "--help"}, {"get", "demo/a", "b"}, {"get"}, {"get", "-"}, {"get", "help"},
	{"get", "--json", "--json", "x"}, {"get", "--json=true", "x"}, {"get", "-json", "x"}, {"get", "x", "--", "--json"},
	{"run", "demo/a"}, {"run", "demo/a", "sh"}, {"run", "demo/a", "--", "sh", "-c", "exit 3"}, {"run", "demo/a", "sh", "-c", "x"},
	{"run", "--keep", "--json", "demo/a", "--", "sleep", "1"}, {"run", "--model", "m", "--prompt=hi\nthere", "demo/a"},
	{"run", "--priority", "5", "demo/a"}, {"run", "--priority=-5", "demo/a"}, {"run", "--priority", "010", "demo/a"},
	{"run", "--priority", "0x10", "demo/a"}, {"run", "--priority", "1_0", "demo/a"}, {"run", "--priority=-0", "demo/a"},
	{"run", "--env", "A=1", "--env", "B=2=3", "--var", "k=v", "demo/a"}, {"run", "--env", "A=1,B=2", "demo/a"},
	{"run", "--env", "=1", "demo/a"}, {"run", "--env", "A", "demo/a"}, {"run", "--var", " k=v", "demo/a"},
	{"run", "--cwd", "..", "demo/a"}, {"run", "--cwd=/tmp//x/", "demo/a"}, {"run", "--cwd", "", "demo/a"},
	{"run", "--role", "r", "--account", "a", "--identity", "i", "--mcp", "self", "--worktree", "w", "demo/a"},
	{"run", "--provider", "shell", "demo/a"}, {"run", "--provider=claude", "--env", "ANTHROPIC_API_KEY=x", "demo/a"},
	{"run", "--provider", "codex", "--account", "work", "--json", "demo/a", "--", "codex"}, {"run", "--wait", "demo/a"}, {"run", "--sandbox", "demo/a"},
	{"run", "--model", "a", "--model", "b", "demo/a"}, {"run", "--keep=true", "demo/a"}, {"run", "--", "demo/a"},
	{"run", "demo/a", "--", "--", "x"}, {"run", "demo/a", "x", "--", "y"}, {"run", "demo/a", "--json"},
	{"run", "--model", "--keep", "demo/a"}, {"run", "--model"}, {"run"}, {"run", "--prompt", "", "demo/a"},
	{"run", "demo/a", ""}, {"run", "demo/a", "--", ""}, {"run", "help"}, {"get", "x", "-h"},
	{"ls"}, {"ls", "demo/*"}, {"ls", "--json"}, {"ls", "a", "b"}, {"ls", "--all"}, {"ls", "--state", "live"}, {"ls", " -x"},
}

// TestFastParseAgreesWithCLI: every command line the fast path claims is one the full
// command line (urfave/cli, the same flags) turns into the same request.
func TestFastParseAgreesWithCLI(t *testing.T) {
	t.Setenv("ORCR_ID", "")
	t.Setenv("ORCR_FAST", "")
	claimed := 0
	for _, s := range fastSeeds {
		args := append([]string{"orcr", "agent"}, s...)
		if _, ok := fast.Parse(args, os.Getenv, os.Getwd); ok {
			claimed++
		}
		checkFastParse(t, args)
	}
	// The comparison means something only if the fast path takes the common forms.
	for _, s := range [][]string{{"get", "demo/a"}, {"get", "--json", "demo/a"}, {"get", "demo/a", "--json"},
		{"run", "demo/a", "--", "sh", "-c", "exit 3"}, {"run", "--keep", "--json", "demo/a", "--", "sleep", "1"}, {"ls"}, {"ls", "x/*"}} {
		if _, ok := fast.Parse(append([]string{"orcr", "agent"}, s...), os.Getenv, os.Getwd); !ok {
			t.Errorf("the fast path does not take %q", s)
		}
	}
	t.Setenv("ORCR_FAST", "0")
	if _, ok := fast.Parse([]string{"orcr", "agent", "get", "x"}, os.Getenv, os.Getwd); ok {
		t.Error("ORCR_FAST=0: the fast path still answers")
	}
	t.Logf("%d of %d seeds claimed", claimed, len(fastSeeds))
}

// FuzzFastParseAgreesWithCLI: args are the fuzzer's string split at NUL after "orcr agent".
func FuzzFastParseAgreesWithCLI(f *testing.F) {
	for _, s := range fastSeeds {
		f.Add(strings.Join(s, "\x00"))
	}
	f.Fuzz(func(t *testing.T, s string) {
		t.Setenv("ORCR_ID", "")
		t.Setenv("ORCR_FAST", "")
		checkFastParse(t, append([]string{"orcr", "agent"}, strings.Split(s, "\x00")...))
	})
}

// fill sets every field of v (a pointer) to a value of its own, n counting up.
func fill(v reflect.Value, n *int) {
	*n++
	switch v.Kind() {
	case reflect.Pointer:
		v.Set(reflect.New(v.Type().Elem()))
		fill(v.Elem(), n)
	case reflect.Struct:
		if v.Type() == reflect.TypeOf(time.Time{}) {
			v.Set(reflect.ValueOf(time.Date(2026, 12, 3, 10, 0, *n, 0, time.UTC)))
			return
		}
		for i := 0; i < v.NumField(); i++ {
			fill(v.Field(i), n)
		}
	case reflect.Slice:
		v.Set(reflect.MakeSlice(v.Type(), 2, 2))
		fill(v.Index(0), n)
		fill(v.Index(1), n)
	case reflect.String:
		v.SetString("s" + strings.Repeat("x", *n))
	case reflect.Int, reflect.Int64:
		v.SetInt(int64(*n))
	case reflect.Float64:
		v.SetFloat(float64(*n) + 0.5)
	case reflect.Bool:
		v.SetBool(true)
	}
}

// TestFastAgentIsWireAgent: every field agent get prints is decoded from wire.Agent's
// JSON under its name and type — set all of fast.Agent, pass it through a wire.Agent
// (which refuses names it does not have) and back, and nothing is lost.
func TestFastAgentIsWireAgent(t *testing.T) {
	var fa fast.Agent
	n := 0
	fill(reflect.ValueOf(&fa).Elem(), &n)
	b, err := json.Marshal(fa)
	if err != nil {
		t.Fatal(err)
	}
	var wa wire.Agent
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&wa); err != nil {
		t.Fatalf("fast.Agent has a field wire.Agent does not: %v", err)
	}
	b2, err := json.Marshal(wa)
	if err != nil {
		t.Fatal(err)
	}
	var back fast.Agent
	if err := json.Unmarshal(b2, &back); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(back, fa) {
		t.Fatalf("through wire.Agent and back:\n got %+v\nwant %+v", back, fa)
	}
	if fast.ProtocolVersion != wire.Version {
		t.Fatalf("fast.ProtocolVersion %d, wire.Version %d", fast.ProtocolVersion, wire.Version)
	}
}

// TestFastFormatsAreCore: the fast path's copies of core's and wire's formats print
// what those print, over counts and costs of every size.
func TestFastFormatsAreCore(t *testing.T) {
	rng := rand.New(rand.NewPCG(8, 27))
	count := func() int64 {
		switch rng.IntN(4) {
		case 0:
			return 0
		case 1:
			return rng.Int64N(2000)
		}
		return rng.Int64N(int64(math.Pow(10, float64(rng.IntN(13)))) + 1)
	}
	for i := 0; i < 20000; i++ {
		u := wire.Usage{InputTokens: count(), OutputTokens: count(), CacheReadTokens: count(), CacheWriteTokens: count()}
		if rng.IntN(3) > 0 {
			c := []float64{0, 0.004, -0.004, 0.005, 99.995, 100, 1e6}[rng.IntN(7)]
			if rng.IntN(2) == 0 {
				c = rng.Float64() * math.Pow(10, float64(rng.IntN(6)-2))
			}
			u.CostUSD = &c
		}
		fu := fast.Usage{InputTokens: u.InputTokens, OutputTokens: u.OutputTokens, CacheReadTokens: u.CacheReadTokens,
			CacheWriteTokens: u.CacheWriteTokens, CostUSD: u.CostUSD}
		if got, want := fast.FormatTokens(fu), core.FormatTokens(u); got != want {
			t.Fatalf("%+v: tokens %q, core %q", u, got, want)
		}
		if got, want := fast.FormatCost(fu), core.FormatCost(wire.Agent{Usage: u}); got != want {
			t.Fatalf("%+v cost %v: %q, core %q", u, *u.CostUSD, got, want)
		}
	}
	code := 3
	if got, want := fast.ExitSuffix(&code), core.ExitSuffix(wire.Agent{ExitCode: &code}); got != want {
		t.Errorf("exit suffix %q, core %q", got, want)
	}
	if got, want := fast.ExitSuffix(nil), core.ExitSuffix(wire.Agent{}); got != want {
		t.Errorf("no exit suffix %q, core %q", got, want)
	}
	opts := []wire.Option{{Label: "Yes", Key: "1", Meaning: wire.MeaningAllowOnce}, {Label: "No, and tell", Key: "esc", Meaning: wire.MeaningDeny, Text: true}}
	fopts := []fast.Option{{Label: "Yes", Key: "1", Meaning: wire.MeaningAllowOnce}, {Label: "No, and tell", Key: "esc", Meaning: wire.MeaningDeny}}
	if got, want := fast.FormatOptions(fopts), wire.FormatOptions(opts); got != want {
		t.Errorf("options %q, wire %q", got, want)
	}
	one, two, usd := 1, 0, 2.555
	for _, sp := range []wire.SpawnPolicy{{MaxChildren: &one}, {MaxDepth: &two, Roles: []string{"a", "b"}},
		{Providers: []string{"claude"}, BudgetUSD: &usd}, {MaxChildren: &one, MaxDepth: &two, Providers: []string{"x"}, Roles: []string{"r"}, BudgetUSD: &usd}} {
		fs := fast.Spawn{MaxChildren: sp.MaxChildren, MaxDepth: sp.MaxDepth, Providers: sp.Providers, Roles: sp.Roles, BudgetUSD: sp.BudgetUSD}
		if got, want := fs.String(), sp.String(); got != want {
			t.Errorf("spawn %q, wire %q", got, want)
		}
	}
}

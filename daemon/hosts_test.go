package daemon

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"orcr/config"
	"orcr/core/wire"
	"orcr/testutil/testbin"
)

// TestDiscover walks the host rules of DESIGN §6 against real programs: the real tmux,
// /bin/false as a tmux that does not run, and paths where nothing is.
func TestDiscover(t *testing.T) {
	tmuxPath, err := exec.LookPath("tmux")
	if err != nil {
		t.Fatalf("tmux is required: %v (apt-get install tmux)", err)
	}
	empty := t.TempDir()
	// herdr on PATH: the protocol-faithful fake, under herdr's name.
	withHerdr := t.TempDir()
	if err := os.Symlink(testbin.Build(t, "orcr/herdr/herdrtest/cmd/fakeherdr"), filepath.Join(withHerdr, "herdr")); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name     string
		host     string // $ORCR_HOST
		herdrEnv string // $ORCR_HERDR_BIN
		path     string // $PATH
		cfg      config.Config
		want     string // chosen host; "" for an error
		code     string // the error's code
		mentions string // in Why, or in the error
	}{
		{name: "auto, nothing installed", path: empty, want: "pty", mentions: "neither herdr nor tmux"},
		{name: "auto, tmux on PATH", path: filepath.Dir(tmuxPath), want: "tmux", mentions: "tmux found at " + tmuxPath},
		{name: "auto, herdr and tmux on PATH", path: withHerdr + ":" + filepath.Dir(tmuxPath), want: "herdr", mentions: "found on $PATH"},
		{name: "auto, tmux that does not run", path: empty, cfg: config.Config{Tmux: config.Tmux{Bin: "/bin/false"}},
			want: "pty", mentions: "tmux not usable"},
		{name: "auto, bad $ORCR_HERDR_BIN", path: filepath.Dir(tmuxPath), herdrEnv: "/nonexistent/herdr",
			code: wire.CodeMissingProgram, mentions: "$ORCR_HERDR_BIN"},
		{name: "auto, bad config herdr.bin", path: filepath.Dir(tmuxPath), cfg: config.Config{Herdr: config.Herdr{Bin: "/nonexistent/herdr"}},
			code: wire.CodeMissingProgram, mentions: "config herdr.bin"},
		{name: "explicit tmux ignores a bad herdr.bin", host: "tmux", path: filepath.Dir(tmuxPath),
			cfg: config.Config{Herdr: config.Herdr{Bin: "/nonexistent/herdr"}}, want: "tmux", mentions: "chosen by $ORCR_HOST"},
		{name: "explicit tmux missing", host: "tmux", path: empty, code: wire.CodeMissingProgram, mentions: "apt-get install tmux"},
		{name: "explicit herdr missing", host: "herdr", path: empty, code: wire.CodeMissingProgram, mentions: "install herdr"},
		{name: "config host pty", path: filepath.Dir(tmuxPath), cfg: config.Config{Host: "pty"}, want: "pty", mentions: "chosen by config host"},
		{name: "unknown host", host: "screen", path: empty, code: wire.CodeInvalidParams, mentions: `unknown host "screen"`},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Setenv("ORCR_HOST", c.host)
			t.Setenv("ORCR_HERDR_BIN", c.herdrEnv)
			t.Setenv("PATH", c.path)
			got := discover(context.Background(), c.cfg)
			if len(got.Hosts) != 3 || got.Hosts[0].Name != "herdr" || got.Hosts[1].Name != "tmux" || !got.Hosts[2].Found {
				t.Fatalf("statuses %+v", got.Hosts)
			}
			if c.want == "" {
				if got.Err == nil || got.Name != "" {
					t.Fatalf("chose %q (%s); want an error", got.Name, got.Why)
				}
				if wire.CodeOf(got.Err) != c.code || !strings.Contains(got.Err.Error(), c.mentions) {
					t.Fatalf("error %q (code %s); want code %s mentioning %q", got.Err, wire.CodeOf(got.Err), c.code, c.mentions)
				}
				if n := strings.Count(got.Err.Error(), "install herdr"); n > 1 {
					t.Fatalf("the install pointer is repeated %d times: %s", n, got.Err)
				}
				return
			}
			if got.Err != nil || got.Name != c.want || !strings.Contains(got.Why, c.mentions) {
				t.Fatalf("chose %q (%s), err %v; want %s mentioning %q", got.Name, got.Why, got.Err, c.want, c.mentions)
			}
			// What doctor prints agrees with the choice: a chosen tmux is found.
			if c.want == "tmux" && !got.Hosts[1].Found {
				t.Fatalf("tmux chosen but its status says missing: %+v", got.Hosts[1])
			}
		})
	}
}

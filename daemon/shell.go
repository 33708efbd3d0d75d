package daemon

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"orcr/cli"
	"orcr/config"
)

// probeShell asks the user's shell as a login shell — how the CLIs' tool shells
// (claude's Bash, a codex sandbox) often run, with the PATH the login setup makes —
// whether it finds orcr. Briefs call orcr by its path (ORCR_BIN), so a run works
// either way; doctor says what an agent or a person typing `orcr` in such a shell
// gets.
func probeShell(ctx context.Context) cli.ShellStatus {
	sh := os.Getenv("SHELL")
	if sh == "" {
		sh = "/bin/sh"
	}
	st := cli.ShellStatus{Shell: sh}
	st.Bin, _ = os.Executable()
	if strings.Contains(st.Bin, string(filepath.Separator)+"go-build") {
		st.Bin = filepath.Join(config.Home(), "bin", "orcr") // where serve copies itself (stableSelf)
	}
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, sh, "-lc", "command -v orcr")
	// A login setup that hangs may leave children holding the output pipe (pyenv's
	// rehash waits a minute for a stale lock): the whole group is killed at the
	// timeout and the pipe given up a second later, so doctor answers in ~6 s.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	cmd.WaitDelay = time.Second
	out, err := cmd.Output()
	// A login setup may print (a greeting, a version manager's notes): the answer is
	// the last line.
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	path := strings.TrimSpace(lines[len(lines)-1])
	var ee *exec.ExitError
	switch {
	case ctx.Err() != nil:
		st.Err = "no answer within 5 s (its login setup waits for something)"
	case err == nil && path != "":
		st.Found, st.Path = true, path
		a, aerr := filepath.EvalSymlinks(path)
		b, berr := filepath.EvalSymlinks(st.Bin)
		st.Other = aerr != nil || berr != nil || a != b
	case err != nil && !errors.As(err, &ee):
		st.Err = fmt.Sprintf("cannot run %s: %v", sh, err)
	}
	return st
}

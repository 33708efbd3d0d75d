package nodes

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"golang.org/x/crypto/ssh"

	nodeapi "orcr/nodes/api"
)

// Runs on nodes (DESIGN §14): a coder placed on a node works in a clone there. The
// clone is made and kept up to date by `git push` from this machine over the node's
// own SSH credentials (its destination, port, identity files and known hosts, as the
// link uses them: GIT_SSH_COMMAND runs ssh with exactly those), its milestone branch
// comes back by `git fetch` the same way, and merging and the compare-and-swap of the
// feature branch stay here (orchestrate/run asks for a clone when it briefs a coder on
// a node, and for the branch back when the coder says `run done`).

// validCloneName says whether s may name a clone's directory: 1–128 of [A-Za-z0-9._-],
// starting with a letter or digit. A loop, not a regexp: `{0,127}` compiles into a
// program of ~1,700 allocations, paid at every orcr start if built at init
// (TestInitIsCheap).
func validCloneName(s string) bool {
	if len(s) == 0 || len(s) > 128 {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c >= 'A' && c <= 'Z', c >= 'a' && c <= 'z', c >= '0' && c <= '9':
		case i > 0 && (c == '.' || c == '_' || c == '-'):
		default:
			return false
		}
	}
	return true
}

// gitTimeout bounds one push or fetch.
const gitTimeout = 5 * time.Minute

// CloneOn gives node a clone of branch of the repository at repo (this machine's),
// in the node's orcr directory under clones/run/m, with branch checked out; a clone
// there already is brought to branch's tip here (its work tree updated with it). It
// returns the clone's directory on the node.
func (s *Service) CloneOn(ctx context.Context, node, repo, branch, run, m string) (string, error) {
	if !validCloneName(run) || !validCloneName(m) {
		return "", fmt.Errorf("clone on node %s: bad run or milestone name %q/%q", node, run, m)
	}
	l, _, err := s.linkOf(node)
	if err != nil {
		return "", err
	}
	client, home, err := l.sshClient()
	if err != nil {
		return "", err
	}
	dir := home + "/clones/" + run + "/" + m
	// One push into a clone at a time: two pushes of one ref race ("cannot lock
	// ref"). An agent is handed over once (remote.go: the link's re-read hands over
	// only what no launch of this server is handing over), so this guards callers
	// other than the hand-over.
	mu, _ := s.cloneMu.LoadOrStore(node+"\x00"+dir, &sync.Mutex{})
	mu.(*sync.Mutex).Lock()
	defer mu.(*sync.Mutex).Unlock()
	q := shellQuote
	// A repository that takes pushes into its checked-out branch (updateInstead: the
	// work tree follows, and a dirty one refuses).
	prep := fmt.Sprintf(`set -e
d=%s
if [ ! -d "$d/.git" ]; then mkdir -p "$d"; git init -q "$d"; fi
git -C "$d" config receive.denyCurrentBranch updateInstead
git -C "$d" config user.name >/dev/null || git -C "$d" config user.name "orcr coder"
git -C "$d" config user.email >/dev/null || git -C "$d" config user.email "orcr@$(hostname 2>/dev/null || echo node)"`, q(dir))
	if err := runRemote(ctx, client, prep); err != nil {
		return "", fmt.Errorf("node %s: make the clone %s: %w", node, dir, err)
	}
	if err := s.git(ctx, node, repo, "push", "--force", "--quiet", s.gitURL(node, dir), "refs/heads/"+branch+":refs/heads/"+branch); err != nil {
		return "", err
	}
	checkout := fmt.Sprintf(`set -e
d=%s
if [ "$(git -C "$d" symbolic-ref -q HEAD)" != %s ]; then git -C "$d" checkout -q -f %s; fi`, q(dir), q("refs/heads/"+branch), q(branch))
	if err := runRemote(ctx, client, checkout); err != nil {
		return "", fmt.Errorf("node %s: check out %s in %s: %w", node, branch, dir, err)
	}
	return dir, nil
}

// FetchFrom brings branch of the clone at dir on node into the work tree at wt here
// (a worktree with branch checked out): fetched, then the worktree reset to it.
func (s *Service) FetchFrom(ctx context.Context, node, dir, branch, wt string) error {
	if err := s.git(ctx, node, wt, "fetch", "--quiet", s.gitURL(node, dir), "refs/heads/"+branch); err != nil {
		return err
	}
	return s.git(ctx, node, wt, "reset", "--quiet", "--hard", "FETCH_HEAD")
}

// gitURL is the ssh URL of dir on node; "" when the node is unknown.
func (s *Service) gitURL(node, dir string) string {
	t, ok := s.targetOf(node)
	if !ok {
		return ""
	}
	return fmt.Sprintf("ssh://%s@%s:%d%s", t.User, bracket(t.Addr), t.Port, dir)
}

func bracket(addr string) string {
	if strings.Contains(addr, ":") {
		return "[" + addr + "]"
	}
	return addr
}

func (s *Service) targetOf(node string) (target, bool) {
	s.mu.Lock()
	n, ok := s.nodes[node]
	var spec nodeapi.Node
	if ok {
		spec = n.spec
	}
	s.mu.Unlock()
	if !ok {
		return target{}, false
	}
	t, err := s.resolve(spec)
	return t, err == nil
}

// git runs git in dir with GIT_SSH_COMMAND set to ssh with node's credentials: its
// identity files (or ssh's default ones of this user's home), the known hosts the
// link checks (a host it does not know is refused, never accepted), no config file
// (the destination is resolved already), batch mode.
func (s *Service) git(ctx context.Context, node, dir string, args ...string) error {
	t, ok := s.targetOf(node)
	if !ok {
		return fmt.Errorf("node %s is not registered", node)
	}
	ids := t.Identities
	if len(ids) == 0 {
		home, _ := os.UserHomeDir()
		for _, n := range []string{"id_ed25519", "id_ecdsa", "id_rsa"} {
			if f := filepath.Join(home, ".ssh", n); fileExists(f) {
				ids = append(ids, f)
			}
		}
	}
	sshCmd := []string{"ssh", "-F", "/dev/null", "-o", "BatchMode=yes", "-o", "StrictHostKeyChecking=yes",
		"-o", "UserKnownHostsFile=" + knownHostsArg(s, t), "-p", strconv.Itoa(t.Port)}
	for _, id := range ids {
		sshCmd = append(sshCmd, "-o", "IdentitiesOnly=yes", "-i", id)
	}
	for i, a := range sshCmd {
		sshCmd[i] = shellQuote(a)
	}
	ctx, cancel := context.WithTimeout(ctx, gitTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, "git", append([]string{"-C", dir}, args...)...)
	cmd.Env = append(os.Environ(), "GIT_SSH_COMMAND="+strings.Join(sshCmd, " "), "GIT_TERMINAL_PROMPT=0")
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	cmd.WaitDelay = time.Second
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("node %s: git %s: %w: %s", node, args[0], err, strings.TrimSpace(out.String()))
	}
	return nil
}

func fileExists(p string) bool {
	st, err := os.Stat(p)
	return err == nil && st.Mode().IsRegular()
}

// sshClient is the link's SSH connection and the node's ORCR_HOME, or why the node
// cannot be reached now.
func (l *link) sshClient() (*ssh.Client, string, error) {
	if _, err := l.transport(); err != nil {
		return nil, "", err
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.client == nil {
		return nil, "", fmt.Errorf("node %s: no connection", l.name)
	}
	return l.client, l.home, nil
}

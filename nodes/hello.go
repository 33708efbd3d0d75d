package nodes

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"orcr/internal/buildinfo"
	"os"
	"runtime"
	"strconv"
	"sync"

	"orcr/core"
	"orcr/core/wire"
	nodeapi "orcr/nodes/api"
)

// protocolStamp makes a binary say it speaks another wire protocol than
// wire.Version: tests build a node of another protocol with
// -ldflags "-X orcr/nodes.protocolStamp=N". Empty in every release.
var protocolStamp string

// protocol is the wire protocol this binary speaks to other orcr servers (node.hello's
// Wire, which a coordinator compares with its own).
func protocol() int {
	if n, err := strconv.Atoi(protocolStamp); err == nil {
		return n
	}
	return wire.Version
}

// hello is node.hello: what this server says of itself to a coordinator.
func (s *Service) hello(ctx context.Context) (nodeapi.HelloResult, error) {
	sum, err := s.runningSum()
	if err != nil {
		return nodeapi.HelloResult{}, err
	}
	live := 0
	if s.k != nil {
		agents, err := s.k.List(ctx, wire.ListParams{})
		if err != nil {
			return nodeapi.HelloResult{}, err
		}
		for _, a := range agents {
			if !a.State.Terminal() {
				live++
			}
		}
	}
	r := nodeapi.HelloResult{Version: Version(), Binary: sum, Wire: protocol(), OS: runtime.GOOS, Arch: runtime.GOARCH,
		FreeMB: core.FreeMemoryMB(), TotalMB: core.MemTotalMB(), Agents: live, Home: s.opts.Home, PID: os.Getpid()}
	if s.k != nil {
		r.LastSeq = s.k.LastSeq()
		r.RSS = s.ownRSS(ctx)
	}
	r.Landlock = s.ownLandlock() // landlock.go
	return r, nil
}

var selfSums sync.Map // path → sha256 hex

// selfSum is the SHA-256 of this server's binary file (what it sends a node), read once.
func (s *Service) selfSum() (string, error) {
	return fileSum(s.opts.Self)
}

// runningSum is the SHA-256 of the program this process runs, which node.hello
// reports: read through /proc/self/exe, the running file even after a coordinator put
// a newer one in its place (a node keeps its older server while it has agents, and
// must not say it runs the new one). Without /proc it is the file's.
func (s *Service) runningSum() (string, error) {
	if s.opts.Self != "" {
		if exe, err := os.Executable(); err == nil && exe == s.opts.Self {
			if _, err := os.Stat("/proc/self/exe"); err == nil {
				return fileSum("/proc/self/exe")
			}
		}
	}
	return s.selfSum()
}

func fileSum(path string) (string, error) {
	if path == "" {
		return "", fmt.Errorf("no binary path known")
	}
	if v, ok := selfSums.Load(path); ok {
		return v.(string), nil
	}
	f, err := os.Open(path)
	if err != nil {
		return "", fmt.Errorf("read own binary: %w", err)
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		return "", fmt.Errorf("read own binary: %w", err)
	}
	sum := hex.EncodeToString(h.Sum(nil))
	selfSums.Store(path, sum)
	return sum, nil
}

// Version is the module version, or the VCS revision a source build records (as
// `orcr version` prints it).
func Version() string { return buildinfo.Version() }

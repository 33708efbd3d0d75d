package daemon

import (
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"time"

	"orcr/config"
	"orcr/core"
	"orcr/nodes"
	nodeapi "orcr/nodes/api"
)

// newNodes builds the nodes feature (DESIGN §14) from config.toml's [[nodes]].
func newNodes(cfg config.Config, home, self string, provs []core.Provider, log *slog.Logger) (*nodes.Service, error) {
	var ns []nodeapi.Node
	for _, n := range cfg.Nodes {
		id := n.IdentityFile
		if id != "" && !filepath.IsAbs(id) && id[0] != '~' && cfg.Path != "" {
			id = filepath.Join(filepath.Dir(cfg.Path), id)
		}
		ns = append(ns, nodeapi.Node{Name: n.Name, SSH: n.SSH, IdentityFile: id, MaxAgents: n.MaxAgents,
			Accounts: n.Accounts, Labels: n.Labels, AcceptNewHostKey: n.AcceptNewHostKey})
	}
	// $ORCR_NODE_KEEPALIVE shortens the keepalive (tests of a cut link); default 5 s.
	var keep time.Duration
	if v := os.Getenv("ORCR_NODE_KEEPALIVE"); v != "" {
		d, err := time.ParseDuration(v)
		if err != nil || d <= 0 {
			return nil, fmt.Errorf("$ORCR_NODE_KEEPALIVE=%q: give a duration such as 1s", v)
		}
		keep = d
	}
	// $ORCR_NODE_BACKOFF_MAX caps the wait between attempts to link again (tests of a
	// long cut); default 15 s.
	var backoff time.Duration
	if v := os.Getenv("ORCR_NODE_BACKOFF_MAX"); v != "" {
		d, err := time.ParseDuration(v)
		if err != nil || d <= 0 {
			return nil, fmt.Errorf("$ORCR_NODE_BACKOFF_MAX=%q: give a duration such as 2s", v)
		}
		backoff = d
	}
	return nodes.New(nodes.Options{Logger: log, Home: home, Self: self, Config: ns, Keepalive: keep, BackoffMax: backoff, Secrets: secretsPath(), Providers: provs, LocalMax: cfg.LocalCap()})
}

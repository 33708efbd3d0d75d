package nodes

import (
	"context"
	"fmt"
	"net"
	"path/filepath"
	"strings"

	"golang.org/x/crypto/ssh"

	"orcr/core"
	"orcr/core/socket"
	"orcr/core/wire"
)

// Agents on a node call orcr (DESIGN §14: lineage across machines). The coordinator
// asks the node's sshd, over the link's one connection, to listen on a unix socket in
// the node's orcr directory (OpenSSH's streamlocal-forward@openssh.com); each
// connection a process there makes to it comes back over the same connection as a
// forwarded-streamlocal channel, and is served here by the coordinator's own socket
// server as a call from that node (core.Caller.Node). The node's server gives the panes
// of the agents the coordinator placed there that socket as their ORCR_SOCKET, and
// its own socket as ORCR_HOOK_SOCKET (the hooks go to the server that watches the
// pane). So `orcr agent run child`, `orcr agent ls`, `orcr run done` inside a node's
// pane reach the one tree here, and a child is placed on its parent's node by
// default. A call over the forward must claim an agent placed on that node (its
// ORCR_ID); it is that agent, and nothing else: a call without one is refused. The
// forward is asked for again on every link, at the same path, so a pane's socket
// outlives a reconnect.

// upstreamSock is the name of the forwarded socket in the node's ORCR_HOME.
const upstreamSock = "coordinator.sock"

// envNode is the variable the coordinator adds to the env of each agent it hands a
// node: its node's name. The node's server recognises the coordinator's agents by it.
const envNode = "ORCR_NODE"

// ServeForwarded gives the feature the socket server's ServeConn, which serves the
// calls a node's panes make over its link (the daemon calls it once the socket
// listens; until then such a call waits for it).
func (s *Service) ServeForwarded(serve func(net.Conn, core.Caller)) {
	s.upMu.Lock()
	defer s.upMu.Unlock()
	if s.upServe == nil {
		s.upServe = serve
		close(s.upReady)
	}
}

// forward asks the node's sshd to listen on the node's upstream socket and serves
// what connects to it until the connection ends. An sshd that refuses
// (AllowStreamLocalForwarding no, DisableForwarding yes) leaves the node's agents
// unable to call orcr: the link is made anyway, and the returned reason is the node's
// warning (node ls/show, doctor), and refuses there the agents that must call orcr.
func (l *link) forward(client *ssh.Client, home string) string {
	path := filepath.Join(home, upstreamSock)
	ln, err := client.ListenUnix(path)
	if err != nil {
		l.s.log.Warn("node: its agents cannot call orcr: the node's sshd did not forward a socket (AllowStreamLocalForwarding?)",
			"node", l.name, "path", path, "err", err)
		return noForwardReason
	}
	l.s.wg.Add(1)
	go func() {
		defer l.s.wg.Done()
		defer ln.Close()
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			l.s.wg.Add(1)
			go func() {
				defer l.s.wg.Done()
				l.s.serveForwarded(l.ctx, c, l.name)
			}()
		}
	}()
	return ""
}

// noForwardReason is the warning of a node whose sshd refused the forward.
const noForwardReason = "agents cannot call orcr: the node's sshd refused streamlocal forwarding " +
	"(set AllowStreamLocalForwarding yes, and no DisableForwarding, in its sshd_config)"

// callsOrcr says whether agent path must call orcr from its pane: a run's agents
// (runs/NAME/…, orchestrate/run's AgentPath) report milestones with `orcr run`.
func callsOrcr(path string) bool { return strings.HasPrefix(path, "runs/") }

// noForwardLocked is why an agent at path may not run on node n: it must call orcr
// and the node's sshd refused the forward; "" when it may.
func noForwardLocked(n *node, path string) string {
	if n == nil || n.link == nil || !callsOrcr(path) {
		return ""
	}
	n.link.mu.Lock()
	why := n.link.noForward
	n.link.mu.Unlock()
	if why == "" {
		return ""
	}
	return fmt.Sprintf("%s must call orcr from its pane and node %s cannot let it: %s", path, n.spec.Name, strings.TrimPrefix(why, "agents cannot call orcr: "))
}

func (s *Service) serveForwarded(ctx context.Context, c net.Conn, node string) {
	select {
	case <-s.upReady:
	case <-ctx.Done():
		c.Close()
		return
	}
	s.upMu.Lock()
	serve := s.upServe
	s.upMu.Unlock()
	stop := context.AfterFunc(ctx, func() { c.Close() })
	defer stop()
	serve(c, core.Caller{Node: node})
}

var _ core.LaunchWrapper = (*Service)(nil)

// BeforeLaunch implements core.LaunchHook (nothing to do before a launch).
func (s *Service) BeforeLaunch(context.Context, wire.Agent, bool) error { return nil }

// WrapLaunch implements core.LaunchWrapper on a node's server: the pane of an agent a
// coordinator placed here calls orcr through the coordinator's forwarded socket, and
// reports its hooks to this server.
func (s *Service) WrapLaunch(_ context.Context, a wire.Agent, spec *core.LaunchSpec, _ core.Confinement) (bool, error) {
	if a.Env[envNode] == "" || s.opts.Home == "" {
		return false, nil
	}
	own := socket.SocketPath(s.opts.Home)
	up := filepath.Join(s.opts.Home, upstreamSock)
	out := spec.Env[:0:0]
	for _, kv := range spec.Env {
		if strings.HasPrefix(kv, "ORCR_SOCKET=") || strings.HasPrefix(kv, "ORCR_HOOK_SOCKET=") {
			continue
		}
		out = append(out, kv)
	}
	spec.Env = append(out, "ORCR_SOCKET="+up, "ORCR_HOOK_SOCKET="+own)
	return false, nil
}

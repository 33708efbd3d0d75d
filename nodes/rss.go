package nodes

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strconv"
	"time"

	"orcr/core/wire"
)

// The provider's measured RSS (placement, place.go): each server measures its own
// live agents — the resident memory of each pane's process tree, from /proc — and
// keeps the mean per provider. A node says its figures in node.hello; the coordinator
// measures its own while a node is registered. Placement reserves the largest mean of
// the fleet for the next agent of that provider.

// rssFresh is how long one measurement answers for.
const rssFresh = 5 * time.Second

// measureEvery is how often the coordinator measures its agents while it has nodes.
const measureEvery = 10 * time.Second

func (s *Service) measureLoop() {
	t := time.NewTicker(measureEvery)
	defer t.Stop()
	for {
		if s.PlacesFleet() {
			m := s.ownRSS(s.ctx)
			s.mu.Lock()
			s.localRSS = m
			s.mu.Unlock()
		}
		select {
		case <-s.ctx.Done():
			return
		case <-t.C:
		}
	}
}

// ownRSS is the mean RSS in MB of this server's live agents per provider.
func (s *Service) ownRSS(ctx context.Context) map[string]int {
	s.rssMu.Lock()
	defer s.rssMu.Unlock()
	if !s.rssAt.IsZero() && time.Since(s.rssAt) < rssFresh {
		return s.rss
	}
	s.rssAt = time.Now()
	s.rss = nil
	if s.k == nil {
		return nil
	}
	agents, err := s.k.List(ctx, wire.ListParams{})
	if err != nil {
		return nil
	}
	var pids []int
	var provs []string
	for _, a := range agents {
		if a.State.Live() && a.Node == "" && a.PID > 0 {
			pids = append(pids, a.PID)
			provs = append(provs, providerOf(a))
		}
	}
	if len(pids) == 0 {
		return nil
	}
	sizes := treeRSS("/proc", pids)
	sum, n := map[string]int{}, map[string]int{}
	for i, p := range pids {
		if kb, ok := sizes[p]; ok {
			sum[provs[i]] += kb
			n[provs[i]]++
		}
	}
	out := map[string]int{}
	for prov, kb := range sum {
		out[prov] = (kb/n[prov] + 1023) / 1024
	}
	s.rss = out
	return out
}

// treeRSS is the resident memory in kB of each root's process tree, read from proc
// (a missing root is left out).
func treeRSS(proc string, roots []int) map[int]int {
	ents, err := os.ReadDir(proc)
	if err != nil {
		return nil
	}
	page := os.Getpagesize() / 1024
	parent, rss := map[int]int{}, map[int]int{}
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		b, err := os.ReadFile(filepath.Join(proc, e.Name(), "stat"))
		if err != nil {
			continue
		}
		ppid, pages, ok := parseStat(b)
		if !ok {
			continue
		}
		parent[pid], rss[pid] = ppid, pages*page
	}
	want := map[int]bool{}
	for _, r := range roots {
		want[r] = true
	}
	out := map[int]int{}
	for pid, kb := range rss {
		// Walk up to a root (bounded: a cycle in a racing read must not spin).
		for p, hops := pid, 0; p > 0 && hops < 64; p, hops = parent[p], hops+1 {
			if want[p] {
				out[p] += kb
				break
			}
		}
	}
	return out
}

// parseStat reads the parent pid and the resident pages of a /proc/PID/stat line
// (fields 4 and 24; the command, field 2, is in parentheses and may hold spaces).
func parseStat(b []byte) (ppid, pages int, ok bool) {
	i := bytes.LastIndexByte(b, ')')
	if i < 0 || i+2 > len(b) {
		return 0, 0, false
	}
	f := bytes.Fields(b[i+1:])
	if len(f) < 22 {
		return 0, 0, false
	}
	pp, err1 := strconv.Atoi(string(f[1]))
	pg, err2 := strconv.Atoi(string(f[21]))
	if err1 != nil || err2 != nil || pg < 0 {
		return 0, 0, false
	}
	return pp, pg, true
}

package workflow

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"time"
)

// Retention (DESIGN §18 is silent; like agents' records under gc.retain): a finished
// run — done, failed or stopped — is removed with its log (its events and what its
// outbox held) and its output files once it ended Retain ago, or once Keep finished
// runs newer than it exist. A running run is never removed. `[workflows] keep` and
// `retain` set them; the server prunes at start and every pruneEvery.
const (
	DefaultKeep   = 100
	DefaultRetain = 7 * 24 * time.Hour
	pruneEvery    = 5 * time.Minute
)

// idsBucket holds, per workflow, the highest run number given, so a run number is
// not given again once its run was pruned.
const idsBucket = "ids"

func (s *Service) keep() int {
	if s.o.Keep > 0 {
		return s.o.Keep
	}
	return DefaultKeep
}

func (s *Service) retain() time.Duration {
	if s.o.Retain > 0 {
		return s.o.Retain
	}
	return DefaultRetain
}

// prunes runs Prune at once and then every pruneEvery until the feature closes.
func (s *Service) prunes() {
	defer s.wg.Done()
	t := time.NewTicker(pruneEvery)
	defer t.Stop()
	for {
		if gone, err := s.Prune(s.ctx, s.o.Now()); err != nil && s.ctx.Err() == nil {
			s.log.Warn("workflows: prune", "err", err)
		} else if len(gone) > 0 {
			s.log.Info("workflows: pruned finished runs", "runs", gone)
		}
		select {
		case <-s.ctx.Done():
			return
		case <-t.C:
		case <-s.pruneNow:
		}
	}
}

// Prune removes the finished runs retention lets go (see above) and returns their ids.
func (s *Service) Prune(ctx context.Context, now time.Time) ([]string, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	names, err := s.runs.Names(ctx)
	if err != nil {
		return nil, err
	}
	var done []Run
	for _, id := range names {
		rec, err := s.runs.Get(ctx, id)
		if err != nil {
			return nil, err
		}
		if rec.State.State != RunRunning {
			done = append(done, rec.State)
		}
	}
	ended := func(r Run) time.Time {
		if r.Ended.IsZero() {
			return r.Started
		}
		return r.Ended
	}
	sort.SliceStable(done, func(i, j int) bool { return ended(done[i]).After(ended(done[j])) })
	var gone []string
	for i, r := range done {
		if i < s.keep() && now.Sub(ended(r)) < s.retain() {
			continue
		}
		if err := s.runs.Delete(ctx, r.ID); err != nil {
			return gone, fmt.Errorf("prune workflow run %s: %w", r.ID, err)
		}
		// Its output files, when they are where the server puts them.
		if s.o.Home != "" && r.Dir == filepath.Join(s.o.Home, "workflows", r.ID) {
			if err := os.RemoveAll(r.Dir); err != nil {
				s.log.Warn("workflows: prune output files", "run", r.ID, "err", err)
			}
		}
		gone = append(gone, r.ID)
	}
	return gone, nil
}

// nextID is NAME-N for the next N: past every run of the workflow there is and
// every one there was.
func (s *Service) nextID(ctx context.Context, name string) (string, error) {
	names, err := s.runs.Names(ctx)
	if err != nil {
		return "", err
	}
	n := 0
	if b, err := s.st.Get(ctx, idsBucket, name); err == nil {
		n, _ = strconv.Atoi(string(b))
	}
	for _, id := range names {
		if rest, ok := strings.CutPrefix(id, name+"-"); ok {
			if k, err := strconv.Atoi(rest); err == nil && k > n {
				n = k
			}
		}
	}
	if err := s.st.Put(ctx, idsBucket, name, []byte(strconv.Itoa(n+1))); err != nil {
		return "", fmt.Errorf("workflow %s: number the run: %w", name, err)
	}
	return fmt.Sprintf("%s-%d", name, n+1), nil
}

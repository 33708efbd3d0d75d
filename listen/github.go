package listen

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"orcr/github"
)

// GitHubSource is a github-* source over the one GitHub client. Each repository keeps its
// own cursor entry: for since-based listings (issues, comments, reviews) an RFC 3339 time
// plus, under "<repo> seen", the ids already handled at exactly that time (GitHub's since
// is inclusive, so the newest item comes back once more); for label events, the highest
// event id seen.
//
// github-issues fires for every matching open issue, including those open when the
// listener starts: they are the work queue. Comments, labels and reviews are history, so
// a repository's first poll only sets its cursor ("from now on").
type GitHubSource struct {
	Client *github.Client
	Source Source
	Now    func() time.Time // default time.Now
}

// firstLook bounds the baseline listing of comments at a repository's first poll.
const firstLook = 24 * time.Hour

func (g GitHubSource) now() time.Time {
	if g.Now != nil {
		return g.Now()
	}
	return time.Now()
}

// Poll polls every repository; one failing fails the poll (nothing moves, the error is
// recorded, the tick backs off).
func (g GitHubSource) Poll(ctx context.Context, cursor Cursor) (Poll, error) {
	next := Cursor{}
	for k, v := range cursor {
		next[k] = v
	}
	var all []Event
	for _, repo := range g.Source.Repos {
		var evs []Event
		var err error
		switch g.Source.Type {
		case "github-issues":
			evs, err = g.issues(ctx, repo, next)
		case "github-comments":
			evs, err = g.comments(ctx, repo, next)
		case "github-labels":
			evs, err = g.labels(ctx, repo, next)
		case "github-pr-reviews":
			evs, err = g.reviews(ctx, repo, next)
		default:
			return Poll{}, errors.New("not a github source: " + g.Source.Type)
		}
		if err != nil {
			return Poll{}, err
		}
		all = append(all, evs...)
	}
	slices.SortStableFunc(all, func(a, b Event) int { return a.At.Compare(b.At) })
	return Poll{Events: all, Cursor: next}, nil
}

// Shown is what the source could still show as new beyond a poll's since listing, so
// pruning never forgets an id that could fire again (Ticker.prune):
//
//   - github-issues: every open issue carrying the labels. An issue comes back into the
//     since listing whenever it is updated (a comment bumps it), so its id is kept as
//     long as it is open and labelled; this full listing is read at each prune (hourly,
//     conditional, so an unchanged repository costs 304s). A closed issue's id goes
//     once it is past the age bound; reopened after that, it is work again and fires.
//   - github-labels and github-pr-reviews: nothing. Label events are walked by id and
//     a review's submission time never changes, so nothing behind the cursor comes
//     back; only the age and count bounds apply.
//   - github-comments: nothing. A comment comes back only when edited; one edited more
//     than the age bound (30 days) after it fired fires again.
func (g GitHubSource) Shown(ctx context.Context, _ Cursor) (map[string]bool, error) {
	if g.Source.Type != "github-issues" {
		return nil, nil
	}
	out := map[string]bool{}
	for _, repo := range g.Source.Repos {
		// The poll's own query without since: the URL a cursor-less poll asked for, so
		// an unchanged repository answers 304 from the client's cache.
		got, _, err := g.Client.ListIssues(ctx, repo, github.IssueQuery{State: "open", Labels: g.Source.Labels,
			Sort: "updated", Direction: "asc"})
		if err != nil {
			return nil, err
		}
		if len(got) >= 100*100 {
			// ListIssues stops at 100 pages: a listing that long may be cut, and an id
			// missing from it may be one the source still shows.
			return nil, fmt.Errorf("github: %s has %d or more open issues; not pruning against a listing that may be cut", repo, len(got))
		}
		for _, is := range got {
			if !is.PullRequest {
				out[repo+"#"+strconv.Itoa(is.Number)] = true
			}
		}
	}
	return out, nil
}

// since is a since-based cursor entry: a time and the ids handled at exactly it.
type since struct {
	at   time.Time
	seen map[string]bool
}

func readSince(c Cursor, repo string) (since, bool) {
	v, ok := c[repo]
	if !ok {
		return since{}, false
	}
	at, err := time.Parse(time.RFC3339, v)
	if err != nil {
		return since{}, false
	}
	s := since{at: at, seen: map[string]bool{}}
	if seen := c[repo+" seen"]; seen != "" {
		for _, id := range strings.Split(seen, ",") {
			s.seen[id] = true
		}
	}
	return s, true
}

func (s since) write(c Cursor, repo string) {
	ids := make([]string, 0, len(s.seen))
	for id := range s.seen {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	c[repo] = s.at.UTC().Format(time.RFC3339)
	c[repo+" seen"] = strings.Join(ids, ",")
}

// covers says the item was handled by an earlier poll.
func (s since) covers(at time.Time, id string) bool {
	return at.Before(s.at) || at.Equal(s.at) && s.seen[id]
}

func (s *since) advance(at time.Time, id string) {
	switch {
	case at.After(s.at):
		s.at, s.seen = at, map[string]bool{id: true}
	case at.Equal(s.at):
		if s.seen == nil {
			s.seen = map[string]bool{}
		}
		s.seen[id] = true
	}
}

func containsFold(list []string, s string) bool {
	return slices.ContainsFunc(list, func(x string) bool { return strings.EqualFold(x, s) })
}

func (g GitHubSource) authorized(user string) bool {
	return len(g.Source.AuthorizedUsers) == 0 || containsFold(g.Source.AuthorizedUsers, user)
}

func issueVars(is github.Issue) map[string]string {
	return map[string]string{"repo": is.Repo, "number": strconv.Itoa(is.Number), "title": is.Title,
		"body": is.Body, "url": is.URL, "user": is.User, "labels": strings.Join(is.Labels, ","), "state": is.State}
}

func (g GitHubSource) issues(ctx context.Context, repo string, c Cursor) ([]Event, error) {
	cur, _ := readSince(c, repo)
	got, _, err := g.Client.ListIssues(ctx, repo, github.IssueQuery{State: "open", Labels: g.Source.Labels,
		Since: cur.at, Sort: "updated", Direction: "asc"})
	if err != nil {
		return nil, err
	}
	var out []Event
	for _, is := range got {
		id := repo + "#" + strconv.Itoa(is.Number)
		if is.PullRequest || cur.covers(is.UpdatedAt, id) {
			continue
		}
		cur.advance(is.UpdatedAt, id)
		out = append(out, Event{ID: id, At: is.UpdatedAt, Vars: issueVars(is)})
	}
	if !cur.at.IsZero() {
		cur.write(c, repo)
	}
	return out, nil
}

func (g GitHubSource) comments(ctx context.Context, repo string, c Cursor) ([]Event, error) {
	cur, ok := readSince(c, repo)
	baseline := !ok
	if baseline {
		cur.at = g.now().Add(-firstLook).UTC().Truncate(time.Second)
	}
	got, _, err := g.Client.ListComments(ctx, repo, cur.at, 0)
	if err != nil {
		return nil, err
	}
	issues := map[int]github.Issue{}
	var out []Event
	for _, cm := range got {
		id := repo + "#" + strconv.Itoa(cm.IssueNumber) + "/comment-" + strconv.FormatInt(cm.ID, 10)
		if cur.covers(cm.UpdatedAt, id) {
			continue
		}
		cur.advance(cm.UpdatedAt, id)
		if baseline || !g.authorized(cm.User) || !strings.Contains(strings.ToLower(cm.Body), strings.ToLower(g.Source.Trigger)) {
			continue
		}
		is, ok := issues[cm.IssueNumber]
		if !ok {
			if is, err = g.Client.GetIssue(ctx, repo, cm.IssueNumber); err != nil {
				return nil, err
			}
			issues[cm.IssueNumber] = is
		}
		vars := issueVars(is)
		vars["body"], vars["url"], vars["user"] = cm.Body, cm.URL, cm.User
		vars["comment_id"], vars["issue_body"], vars["issue_url"] = strconv.FormatInt(cm.ID, 10), is.Body, is.URL
		out = append(out, Event{ID: id, At: cm.UpdatedAt, Vars: vars})
	}
	cur.write(c, repo)
	return out, nil
}

func (g GitHubSource) labels(ctx context.Context, repo string, c Cursor) ([]Event, error) {
	after, err := strconv.ParseInt(c[repo], 10, 64)
	baseline := err != nil
	maxPages := 0
	if baseline {
		after, maxPages = 0, 1 // the newest page is enough to know where "now" is
	}
	got, pg, err := g.Client.ListLabelEvents(ctx, repo, after, maxPages)
	if err != nil {
		return nil, err
	}
	c[repo] = strconv.FormatInt(max(after, pg.NewestID), 10)
	if baseline {
		return nil, nil
	}
	var out []Event
	for _, e := range got {
		if len(g.Source.Labels) > 0 && !containsFold(g.Source.Labels, e.Label) || !g.authorized(e.Actor) {
			continue
		}
		vars := issueVars(e.Issue)
		vars["user"], vars["label"] = e.Actor, e.Label
		out = append(out, Event{ID: repo + "/label-event-" + strconv.FormatInt(e.ID, 10), At: e.CreatedAt, Vars: vars})
	}
	return out, nil
}

// reviews walks open pull requests updated at or after the cursor (newest first) and
// lists their reviews; a review fires when it was submitted after the cursor (or at it,
// and not seen there). The cursor then moves to the newest pull request's update:
// reviews bump it, so none is skipped, and a pull request is re-read (one conditional
// request) only while it is the newest. At a repository's first poll only the newest
// pull requests' reviews are read, to know which at the boundary are history.
func (g GitHubSource) reviews(ctx context.Context, repo string, c Cursor) ([]Event, error) {
	cur, ok := readSince(c, repo)
	baseline := !ok
	prs, _, err := g.Client.ListPullRequests(ctx, repo, github.PullQuery{State: "open", Sort: "updated", Direction: "desc", MaxPages: 3})
	if err != nil {
		return nil, err
	}
	newest := cur.at
	for _, pr := range prs {
		if pr.UpdatedAt.After(newest) {
			newest = pr.UpdatedAt
		}
	}
	seen := map[string]bool{}
	var out []Event
	for _, pr := range prs {
		if pr.UpdatedAt.Before(cur.at) {
			break
		}
		if baseline && !pr.UpdatedAt.Equal(newest) {
			continue
		}
		rvs, _, err := g.Client.ListReviews(ctx, repo, pr.Number)
		if err != nil {
			return nil, err
		}
		for _, rv := range rvs {
			id := repo + "#" + strconv.Itoa(pr.Number) + "/review-" + strconv.FormatInt(rv.ID, 10)
			if rv.SubmittedAt.Equal(newest) {
				seen[id] = true
			}
			if baseline || cur.covers(rv.SubmittedAt, id) || !g.authorized(rv.User) {
				continue
			}
			if len(g.Source.States) > 0 && !slices.Contains(g.Source.States, rv.State) {
				continue
			}
			out = append(out, Event{ID: id, At: rv.SubmittedAt, Vars: map[string]string{"repo": repo,
				"number": strconv.Itoa(pr.Number), "title": pr.Title, "body": rv.Body, "url": rv.URL,
				"user": rv.User, "state": strings.ToLower(rv.State), "review_id": strconv.FormatInt(rv.ID, 10),
				"head": pr.Head, "base": pr.Base, "pr_body": pr.Body}})
		}
	}
	// With no open pull request at the baseline the cursor stays at the zero time: every
	// pull request seen later is new, and so are its reviews.
	next := since{at: newest, seen: seen}
	if newest.Equal(cur.at) {
		for id := range cur.seen {
			next.seen[id] = true
		}
	}
	next.write(c, repo)
	return out, nil
}

// GitHubBackoff waits for a rate limit's reset when GitHub named one, else backs off as
// the tick does by default.
func GitHubBackoff(now time.Time, err error, failures int, interval time.Duration) time.Duration {
	if at, ok := github.RetryAt(err); ok {
		return max(at.Sub(now), interval)
	}
	return defaultBackoff(now, err, failures, interval)
}

package github

import (
	"context"
	"errors"
	"maps"
	"net/http"
	"net/url"
	"path"
	"strconv"
	"strings"
	"time"
)

// The operations orcr needs, returning plain values (GitHub's JSON shapes stay in
// this package). Every listing returns a Page saying what it cost and whether
// everything was answered 304.

// Issue is an issue or a pull request seen through the issues API.
type Issue struct {
	Repo        string
	Number      int
	Title       string
	Body        string
	State       string
	User        string
	URL         string // html_url
	Labels      []string
	PullRequest bool // the issues API lists pull requests too
	CreatedAt   time.Time
	UpdatedAt   time.Time
}

// IssueQuery filters ListIssues. Zero values are GitHub's defaults.
type IssueQuery struct {
	State     string    // open (default) | closed | all
	Labels    []string  // only issues carrying all of these
	Since     time.Time // only issues updated at or after
	Sort      string    // created (default) | updated | comments
	Direction string    // desc (default) | asc
	PerPage   int       // default 100
	MaxPages  int       // default 100
}

// ListIssues lists a repository's issues (and pull requests: see Issue.PullRequest).
func (c *Client) ListIssues(ctx context.Context, repo string, q IssueQuery) ([]Issue, Page, error) {
	const op = "list issues"
	owner, name, err := splitRepo(op, repo)
	if err != nil {
		return nil, Page{}, err
	}
	base := url.Values{}
	setNonEmpty(base, "state", q.State)
	setNonEmpty(base, "labels", strings.Join(q.Labels, ","))
	if !q.Since.IsZero() {
		base.Set("since", q.Since.UTC().Format(time.RFC3339))
	}
	setNonEmpty(base, "sort", q.Sort)
	setNonEmpty(base, "direction", q.Direction)
	got, pg, err := listAll(ctx, c, op, repo, q.MaxPages, func(ctx context.Context, page int) ([]issueJSON, *response, error) {
		return getPage[issueJSON](ctx, c, repoPath(owner, name, "issues"), pageQuery(maps.Clone(base), page, perPage(q.PerPage)))
	}, nil)
	return convert(got, repo, issueOf), pg, err
}

// getPage reads one page of a listing.
func getPage[T any](ctx context.Context, c *Client, path string, q url.Values) ([]T, *response, error) {
	var out []T
	resp, err := c.do(ctx, http.MethodGet, path, q, nil, &out)
	return out, resp, err
}

// convert turns GitHub's JSON shapes into this package's plain values.
func convert[T, V any](got []T, repo string, of func(string, *T) V) []V {
	out := make([]V, 0, len(got))
	for i := range got {
		out = append(out, of(repo, &got[i]))
	}
	return out
}

func perPage(n int) int {
	if n <= 0 || n > 100 {
		return 100
	}
	return n
}

func issueOf(repo string, is *issueJSON) Issue {
	if is == nil {
		return Issue{Repo: repo}
	}
	out := Issue{Repo: repo, Number: is.Number, Title: is.Title, Body: is.Body,
		State: is.State, User: is.User.login(), URL: is.HTMLURL,
		PullRequest: is.PullRequest != nil, CreatedAt: is.CreatedAt, UpdatedAt: is.UpdatedAt}
	for _, l := range is.Labels {
		out.Labels = append(out.Labels, l.Name)
	}
	return out
}

// GetIssue reads one issue (or pull request, through the issues API). Like every GET it
// is conditional, so re-reading an unchanged issue costs no rate limit.
func (c *Client) GetIssue(ctx context.Context, repo string, number int) (Issue, error) {
	const op = "get issue"
	owner, name, err := splitRepo(op, repo)
	if err != nil {
		return Issue{}, err
	}
	is, resp, err := callOne(ctx, c, op, repo, true, func() (*issueJSON, *response, error) {
		var is issueJSON
		resp, err := c.do(ctx, http.MethodGet, repoPath(owner, name, "issues/"+strconv.Itoa(number)), nil, nil, &is)
		return &is, resp, err
	})
	if errors.Is(err, ErrMalformed) && resp != nil {
		c.cache.forget(resp.URL)
	}
	var e *Error
	if errors.As(err, &e) {
		e.Item = "issue #" + strconv.Itoa(number)
	}
	if err != nil {
		return Issue{}, err
	}
	return issueOf(repo, is), nil
}

// Comment is an issue or pull-request conversation comment.
type Comment struct {
	Repo        string
	ID          int64
	IssueNumber int
	Body        string
	User        string
	URL         string
	CreatedAt   time.Time
	UpdatedAt   time.Time
}

// ListComments lists a repository's issue comments updated at or after since (zero:
// all), oldest update first, so a poller's cursor is the last one's UpdatedAt.
func (c *Client) ListComments(ctx context.Context, repo string, since time.Time, maxPages int) ([]Comment, Page, error) {
	const op = "list comments"
	owner, name, err := splitRepo(op, repo)
	if err != nil {
		return nil, Page{}, err
	}
	base := url.Values{"sort": {"updated"}, "direction": {"asc"}}
	if !since.IsZero() {
		base.Set("since", since.UTC().Format(time.RFC3339))
	}
	got, pg, err := listAll(ctx, c, op, repo, maxPages, func(ctx context.Context, page int) ([]commentJSON, *response, error) {
		return getPage[commentJSON](ctx, c, repoPath(owner, name, "issues/comments"), pageQuery(maps.Clone(base), page, 100))
	}, nil)
	return convert(got, repo, commentOf), pg, err
}

func commentOf(repo string, cm *commentJSON) Comment {
	n, _ := strconv.Atoi(path.Base(cm.IssueURL))
	return Comment{Repo: repo, ID: cm.ID, IssueNumber: n, Body: cm.Body,
		User: cm.User.login(), URL: cm.HTMLURL, CreatedAt: cm.CreatedAt, UpdatedAt: cm.UpdatedAt}
}

// CreateComment comments on issue or pull request number.
func (c *Client) CreateComment(ctx context.Context, repo string, number int, body string) (Comment, error) {
	const op = "create comment"
	owner, name, err := splitRepo(op, repo)
	if err != nil {
		return Comment{}, err
	}
	cm, _, err := callOne(ctx, c, op, repo, false, func() (*commentJSON, *response, error) {
		var cm commentJSON
		resp, err := c.do(ctx, http.MethodPost, repoPath(owner, name, "issues/"+strconv.Itoa(number)+"/comments"), nil,
			map[string]string{"body": body}, &cm)
		return &cm, resp, err
	})
	if err != nil {
		return Comment{}, err
	}
	return commentOf(repo, cm), nil
}

// LabelEvent is a label being added to an issue or pull request.
type LabelEvent struct {
	Repo      string
	ID        int64
	Label     string
	Actor     string
	Issue     Issue
	CreatedAt time.Time
}

// ListLabelEvents returns the "labeled" events of a repository with ids above afterID,
// oldest first. GET /repos/{o}/{r}/issues/events has no since parameter and lists newest
// first, so the walk stops at the first page reaching afterID: with nothing new that is
// one conditional request, answered 304. afterID 0 walks up to maxPages (default 10).
func (c *Client) ListLabelEvents(ctx context.Context, repo string, afterID int64, maxPages int) ([]LabelEvent, Page, error) {
	const op = "list issue events"
	owner, name, err := splitRepo(op, repo)
	if err != nil {
		return nil, Page{}, err
	}
	if maxPages <= 0 {
		maxPages = 10
	}
	got, pg, err := listAll(ctx, c, op, repo, maxPages, func(ctx context.Context, page int) ([]eventJSON, *response, error) {
		return getPage[eventJSON](ctx, c, repoPath(owner, name, "issues/events"), pageQuery(nil, page, 100))
	}, func(page []eventJSON) bool {
		return len(page) > 0 && page[len(page)-1].ID <= afterID
	})
	for _, e := range got {
		pg.NewestID = max(pg.NewestID, e.ID)
	}
	var out []LabelEvent
	for i := len(got) - 1; i >= 0; i-- {
		e := &got[i]
		if e.ID <= afterID || e.Event != "labeled" {
			continue
		}
		var label string
		if e.Label != nil {
			label = e.Label.Name
		}
		out = append(out, LabelEvent{Repo: repo, ID: e.ID, Label: label,
			Actor: e.Actor.login(), Issue: issueOf(repo, e.Issue), CreatedAt: e.CreatedAt})
	}
	return out, pg, err
}

// PullRequest is a pull request.
type PullRequest struct {
	Repo      string
	Number    int
	Title     string
	Body      string
	State     string
	User      string
	URL       string
	Head      string // branch name
	Base      string
	Draft     bool
	CreatedAt time.Time
	UpdatedAt time.Time
}

// PullQuery filters ListPullRequests.
type PullQuery struct {
	State     string // open (default) | closed | all
	Head      string // "branch" (in the repo's owner) or "owner:branch"
	Base      string
	Sort      string // created (default) | updated
	Direction string // desc for created, else asc (GitHub's defaults)
	MaxPages  int
}

// ListPullRequests lists pull requests.
func (c *Client) ListPullRequests(ctx context.Context, repo string, q PullQuery) ([]PullRequest, Page, error) {
	const op = "list pull requests"
	owner, name, err := splitRepo(op, repo)
	if err != nil {
		return nil, Page{}, err
	}
	head := q.Head
	if head != "" && !strings.Contains(head, ":") {
		head = owner + ":" + head // GitHub filters head only as user:ref
	}
	base := url.Values{}
	setNonEmpty(base, "state", q.State)
	setNonEmpty(base, "head", head)
	setNonEmpty(base, "base", q.Base)
	setNonEmpty(base, "sort", q.Sort)
	setNonEmpty(base, "direction", q.Direction)
	got, pg, err := listAll(ctx, c, op, repo, q.MaxPages, func(ctx context.Context, page int) ([]pullJSON, *response, error) {
		return getPage[pullJSON](ctx, c, repoPath(owner, name, "pulls"), pageQuery(maps.Clone(base), page, 100))
	}, nil)
	return convert(got, repo, pullOf), pg, err
}

func pullOf(repo string, p *pullJSON) PullRequest {
	return PullRequest{Repo: repo, Number: p.Number, Title: p.Title, Body: p.Body,
		State: p.State, User: p.User.login(), URL: p.HTMLURL,
		Head: p.Head.ref(), Base: p.Base.ref(), Draft: p.Draft,
		CreatedAt: p.CreatedAt, UpdatedAt: p.UpdatedAt}
}

// FindPullRequest returns the open pull request from head into base, if there is one.
func (c *Client) FindPullRequest(ctx context.Context, repo, head, base string) (PullRequest, bool, error) {
	prs, _, err := c.ListPullRequests(ctx, repo, PullQuery{State: "open", Head: head, Base: base, MaxPages: 1})
	if err != nil || len(prs) == 0 {
		return PullRequest{}, false, err
	}
	return prs[0], true, nil
}

// NewPullRequest is what CreatePullRequest opens.
type NewPullRequest struct {
	Title string
	Head  string // branch name (or owner:branch from a fork)
	Base  string
	Body  string
	Draft bool
}

// CreatePullRequest opens a pull request. One already open for the same head and base
// is ErrInvalid (GitHub's 422); callers wanting "find or create" call FindPullRequest
// first.
func (c *Client) CreatePullRequest(ctx context.Context, repo string, in NewPullRequest) (PullRequest, error) {
	const op = "create pull request"
	owner, name, err := splitRepo(op, repo)
	if err != nil {
		return PullRequest{}, err
	}
	p, _, err := callOne(ctx, c, op, repo, false, func() (*pullJSON, *response, error) {
		var p pullJSON
		resp, err := c.do(ctx, http.MethodPost, repoPath(owner, name, "pulls"), nil, struct {
			Title string `json:"title"`
			Head  string `json:"head"`
			Base  string `json:"base"`
			Body  string `json:"body"`
			Draft bool   `json:"draft"`
		}{in.Title, in.Head, in.Base, in.Body, in.Draft}, &p)
		return &p, resp, err
	})
	if err != nil {
		return PullRequest{}, err
	}
	return pullOf(repo, p), nil
}

// Review is a submitted pull-request review.
type Review struct {
	Repo        string
	ID          int64
	PRNumber    int
	State       string // APPROVED | CHANGES_REQUESTED | COMMENTED | DISMISSED
	Body        string
	User        string
	URL         string
	SubmittedAt time.Time
}

// ListReviews lists pull request number's reviews, oldest first.
func (c *Client) ListReviews(ctx context.Context, repo string, number int) ([]Review, Page, error) {
	const op = "list reviews"
	owner, name, err := splitRepo(op, repo)
	if err != nil {
		return nil, Page{}, err
	}
	got, pg, err := listAll(ctx, c, op, repo, 0, func(ctx context.Context, page int) ([]reviewJSON, *response, error) {
		return getPage[reviewJSON](ctx, c, repoPath(owner, name, "pulls/"+strconv.Itoa(number)+"/reviews"), pageQuery(nil, page, 100))
	}, nil)
	out := make([]Review, 0, len(got))
	for _, r := range got {
		out = append(out, Review{Repo: repo, ID: r.ID, PRNumber: number, State: r.State,
			Body: r.Body, User: r.User.login(), URL: r.HTMLURL, SubmittedAt: r.SubmittedAt})
	}
	return out, pg, err
}

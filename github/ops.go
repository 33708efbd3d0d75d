package github

import (
	"context"
	"errors"
	"path"
	"strconv"
	"strings"
	"time"

	gh "github.com/google/go-github/v93/github"
)

// The operations orcr needs, returning plain values (no go-github pointers leak out of
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
	opts := &gh.IssueListByRepoOptions{State: q.State, Labels: q.Labels, Since: q.Since.UTC(),
		Sort: q.Sort, Direction: q.Direction}
	got, pg, err := listAll(ctx, c, op, repo, q.MaxPages, func(ctx context.Context, page int) ([]*gh.Issue, *gh.Response, error) {
		opts.ListOptions = gh.ListOptions{Page: page, PerPage: perPage(q.PerPage)}
		return c.gh.Issues.ListByRepo(ctx, owner, name, opts)
	}, nil)
	return convert(got, repo, issueOf), pg, err
}

// convert turns go-github values into this package's plain ones.
func convert[T, V any](got []*T, repo string, of func(string, *T) V) []V {
	out := make([]V, 0, len(got))
	for _, g := range got {
		out = append(out, of(repo, g))
	}
	return out
}

func perPage(n int) int {
	if n <= 0 || n > 100 {
		return 100
	}
	return n
}

func issueOf(repo string, is *gh.Issue) Issue {
	out := Issue{Repo: repo, Number: is.GetNumber(), Title: is.GetTitle(), Body: is.GetBody(),
		State: is.GetState(), User: is.GetUser().GetLogin(), URL: is.GetHTMLURL(),
		PullRequest: is.IsPullRequest(), CreatedAt: is.GetCreatedAt().Time, UpdatedAt: is.GetUpdatedAt().Time}
	for _, l := range is.Labels {
		out.Labels = append(out.Labels, l.GetName())
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
	is, resp, err := callOne(ctx, c, op, repo, true, func() (*gh.Issue, *gh.Response, error) {
		return c.gh.Issues.Get(ctx, owner, name, number)
	})
	if errors.Is(err, ErrMalformed) && resp != nil && resp.Request != nil {
		c.cache.forget(resp.Request.URL.String())
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
	sortBy, dir := "updated", "asc"
	opts := &gh.IssueListCommentsOptions{Sort: &sortBy, Direction: &dir}
	if !since.IsZero() {
		s := since.UTC()
		opts.Since = &s
	}
	got, pg, err := listAll(ctx, c, op, repo, maxPages, func(ctx context.Context, page int) ([]*gh.IssueComment, *gh.Response, error) {
		opts.ListOptions = gh.ListOptions{Page: page, PerPage: 100}
		return c.gh.Issues.ListComments(ctx, owner, name, 0, opts)
	}, nil)
	return convert(got, repo, commentOf), pg, err
}

func commentOf(repo string, cm *gh.IssueComment) Comment {
	n, _ := strconv.Atoi(path.Base(cm.GetIssueURL()))
	return Comment{Repo: repo, ID: cm.GetID(), IssueNumber: n, Body: cm.GetBody(),
		User: cm.GetUser().GetLogin(), URL: cm.GetHTMLURL(), CreatedAt: cm.GetCreatedAt().Time,
		UpdatedAt: cm.GetUpdatedAt().Time}
}

// CreateComment comments on issue or pull request number.
func (c *Client) CreateComment(ctx context.Context, repo string, number int, body string) (Comment, error) {
	const op = "create comment"
	owner, name, err := splitRepo(op, repo)
	if err != nil {
		return Comment{}, err
	}
	cm, _, err := callOne(ctx, c, op, repo, false, func() (*gh.IssueComment, *gh.Response, error) {
		return c.gh.Issues.CreateComment(ctx, owner, name, number, gh.IssueCommentRequest{Body: body})
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
	got, pg, err := listAll(ctx, c, op, repo, maxPages, func(ctx context.Context, page int) ([]*gh.IssueEvent, *gh.Response, error) {
		return c.gh.Issues.ListRepositoryEvents(ctx, owner, name, &gh.ListOptions{Page: page, PerPage: 100})
	}, func(page []*gh.IssueEvent) bool {
		return len(page) > 0 && page[len(page)-1].GetID() <= afterID
	})
	for _, e := range got {
		pg.NewestID = max(pg.NewestID, e.GetID())
	}
	var out []LabelEvent
	for i := len(got) - 1; i >= 0; i-- {
		e := got[i]
		if e.GetID() <= afterID || e.GetEvent() != "labeled" {
			continue
		}
		out = append(out, LabelEvent{Repo: repo, ID: e.GetID(), Label: e.GetLabel().GetName(),
			Actor: e.GetActor().GetLogin(), Issue: issueOf(repo, e.GetIssue()), CreatedAt: e.GetCreatedAt().Time})
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
	opts := &gh.PullRequestListOptions{State: q.State, Head: head, Base: q.Base, Sort: q.Sort, Direction: q.Direction}
	got, pg, err := listAll(ctx, c, op, repo, q.MaxPages, func(ctx context.Context, page int) ([]*gh.PullRequest, *gh.Response, error) {
		opts.ListOptions = gh.ListOptions{Page: page, PerPage: 100}
		return c.gh.PullRequests.List(ctx, owner, name, opts)
	}, nil)
	return convert(got, repo, pullOf), pg, err
}

func pullOf(repo string, p *gh.PullRequest) PullRequest {
	return PullRequest{Repo: repo, Number: p.GetNumber(), Title: p.GetTitle(), Body: p.GetBody(),
		State: p.GetState(), User: p.GetUser().GetLogin(), URL: p.GetHTMLURL(),
		Head: p.GetHead().GetRef(), Base: p.GetBase().GetRef(), Draft: p.GetDraft(),
		CreatedAt: p.GetCreatedAt().Time, UpdatedAt: p.GetUpdatedAt().Time}
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
	p, _, err := callOne(ctx, c, op, repo, false, func() (*gh.PullRequest, *gh.Response, error) {
		return c.gh.PullRequests.Create(ctx, owner, name, gh.CreatePullRequest{
			Title: &in.Title, Head: in.Head, Base: in.Base, Body: &in.Body, Draft: &in.Draft})
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
	got, pg, err := listAll(ctx, c, op, repo, 0, func(ctx context.Context, page int) ([]*gh.PullRequestReview, *gh.Response, error) {
		return c.gh.PullRequests.ListReviews(ctx, owner, name, number, &gh.ListOptions{Page: page, PerPage: 100})
	}, nil)
	out := make([]Review, 0, len(got))
	for _, r := range got {
		out = append(out, Review{Repo: repo, ID: r.GetID(), PRNumber: number, State: r.GetState(),
			Body: r.GetBody(), User: r.GetUser().GetLogin(), URL: r.GetHTMLURL(), SubmittedAt: r.GetSubmittedAt().Time})
	}
	return out, pg, err
}

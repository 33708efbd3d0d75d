package githubtest

import (
	"fmt"
	"time"
)

// JSON shapes of GitHub's REST answers (the fields GitHub sends that a client may read;
// GitHub sends more). They are written here, not borrowed from go-github, so a client
// decoding them tests its decoding against the documented documents.

type userJSON struct {
	Login     string `json:"login"`
	ID        int64  `json:"id"`
	NodeID    string `json:"node_id"`
	AvatarURL string `json:"avatar_url"`
	URL       string `json:"url"`
	HTMLURL   string `json:"html_url"`
	Type      string `json:"type"`
	SiteAdmin bool   `json:"site_admin"`
}

type labelJSON struct {
	ID          int64   `json:"id"`
	NodeID      string  `json:"node_id"`
	URL         string  `json:"url"`
	Name        string  `json:"name"`
	Color       string  `json:"color"`
	Default     bool    `json:"default"`
	Description *string `json:"description"`
}

type issuePRLinks struct {
	URL      string  `json:"url"`
	HTMLURL  string  `json:"html_url"`
	DiffURL  string  `json:"diff_url"`
	PatchURL string  `json:"patch_url"`
	MergedAt *string `json:"merged_at"`
}

type issueJSON struct {
	ID                int64         `json:"id"`
	NodeID            string        `json:"node_id"`
	URL               string        `json:"url"`
	RepositoryURL     string        `json:"repository_url"`
	LabelsURL         string        `json:"labels_url"`
	CommentsURL       string        `json:"comments_url"`
	EventsURL         string        `json:"events_url"`
	HTMLURL           string        `json:"html_url"`
	Number            int           `json:"number"`
	State             string        `json:"state"`
	StateReason       *string       `json:"state_reason"`
	Title             string        `json:"title"`
	Body              *string       `json:"body"`
	User              userJSON      `json:"user"`
	Labels            []labelJSON   `json:"labels"`
	Assignee          *userJSON     `json:"assignee"`
	Assignees         []userJSON    `json:"assignees"`
	Milestone         any           `json:"milestone"`
	Locked            bool          `json:"locked"`
	ActiveLockReason  *string       `json:"active_lock_reason"`
	Comments          int           `json:"comments"`
	PullRequest       *issuePRLinks `json:"pull_request,omitempty"`
	ClosedAt          *string       `json:"closed_at"`
	CreatedAt         string        `json:"created_at"`
	UpdatedAt         string        `json:"updated_at"`
	AuthorAssociation string        `json:"author_association"`
}

type commentJSON struct {
	ID                int64    `json:"id"`
	NodeID            string   `json:"node_id"`
	URL               string   `json:"url"`
	HTMLURL           string   `json:"html_url"`
	Body              string   `json:"body"`
	User              userJSON `json:"user"`
	CreatedAt         string   `json:"created_at"`
	UpdatedAt         string   `json:"updated_at"`
	IssueURL          string   `json:"issue_url"`
	AuthorAssociation string   `json:"author_association"`
}

type eventLabelJSON struct {
	Name  string `json:"name"`
	Color string `json:"color"`
}

type eventJSON struct {
	ID        int64           `json:"id"`
	NodeID    string          `json:"node_id"`
	URL       string          `json:"url"`
	Actor     userJSON        `json:"actor"`
	Event     string          `json:"event"`
	CommitID  *string         `json:"commit_id"`
	CommitURL *string         `json:"commit_url"`
	CreatedAt string          `json:"created_at"`
	Label     *eventLabelJSON `json:"label,omitempty"`
	Issue     issueJSON       `json:"issue"`
}

type repoJSON struct {
	ID       int64    `json:"id"`
	NodeID   string   `json:"node_id"`
	Name     string   `json:"name"`
	FullName string   `json:"full_name"`
	Owner    userJSON `json:"owner"`
	Private  bool     `json:"private"`
	HTMLURL  string   `json:"html_url"`
	URL      string   `json:"url"`
}

type branchJSON struct {
	Label string   `json:"label"`
	Ref   string   `json:"ref"`
	SHA   string   `json:"sha"`
	User  userJSON `json:"user"`
	Repo  repoJSON `json:"repo"`
}

type pullJSON struct {
	URL               string      `json:"url"`
	ID                int64       `json:"id"`
	NodeID            string      `json:"node_id"`
	HTMLURL           string      `json:"html_url"`
	DiffURL           string      `json:"diff_url"`
	PatchURL          string      `json:"patch_url"`
	IssueURL          string      `json:"issue_url"`
	Number            int         `json:"number"`
	State             string      `json:"state"`
	Locked            bool        `json:"locked"`
	Title             string      `json:"title"`
	User              userJSON    `json:"user"`
	Body              *string     `json:"body"`
	Labels            []labelJSON `json:"labels"`
	CreatedAt         string      `json:"created_at"`
	UpdatedAt         string      `json:"updated_at"`
	ClosedAt          *string     `json:"closed_at"`
	MergedAt          *string     `json:"merged_at"`
	MergeCommitSHA    *string     `json:"merge_commit_sha"`
	Draft             bool        `json:"draft"`
	Head              branchJSON  `json:"head"`
	Base              branchJSON  `json:"base"`
	AuthorAssociation string      `json:"author_association"`
}

type reviewJSON struct {
	ID                int64    `json:"id"`
	NodeID            string   `json:"node_id"`
	User              userJSON `json:"user"`
	Body              string   `json:"body"`
	State             string   `json:"state"`
	HTMLURL           string   `json:"html_url"`
	PullRequestURL    string   `json:"pull_request_url"`
	SubmittedAt       string   `json:"submitted_at"`
	CommitID          string   `json:"commit_id"`
	AuthorAssociation string   `json:"author_association"`
}

type rateJSON struct {
	Limit     int    `json:"limit"`
	Remaining int    `json:"remaining"`
	Reset     int64  `json:"reset"`
	Used      int    `json:"used"`
	Resource  string `json:"resource"`
}

func ts(t time.Time) string { return t.UTC().Format(time.RFC3339) }

func tsPtr(t time.Time) *string {
	if t.IsZero() {
		return nil
	}
	s := ts(t)
	return &s
}

func strPtr(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}

// The API's own root, as the client addressed it (so links work for any host).
func (c *call) api() string { return "http://" + c.r.Host }

func (c *call) user(login string) userJSON {
	id := c.s.userID(login)
	return userJSON{Login: login, ID: id, NodeID: fmt.Sprintf("U_%d", id),
		AvatarURL: fmt.Sprintf("%s/avatars/u/%d", c.api(), id),
		URL:       c.api() + "/users/" + login, HTMLURL: c.api() + "/" + login, Type: "User"}
}

func (c *call) repoURL(r *repo) string { return c.api() + "/repos/" + r.owner + "/" + r.name }

func (c *call) association(r *repo, login string) string {
	if login == r.owner {
		return "OWNER"
	}
	return "CONTRIBUTOR"
}

func (c *call) issueJSON(r *repo, is *issue) issueJSON {
	base := c.repoURL(r) + fmt.Sprintf("/issues/%d", is.number)
	kind := "issues"
	if is.pr != nil {
		kind = "pull"
	}
	html := fmt.Sprintf("%s/%s/%s/%s/%d", c.api(), r.owner, r.name, kind, is.number)
	out := issueJSON{ID: is.id, NodeID: fmt.Sprintf("I_%d", is.id), URL: base,
		RepositoryURL: c.repoURL(r), LabelsURL: base + "/labels{/name}", CommentsURL: base + "/comments",
		EventsURL: base + "/events", HTMLURL: html, Number: is.number, State: is.state,
		Title: is.title, Body: strPtr(is.body), User: c.user(is.user), Labels: []labelJSON{},
		Assignees: []userJSON{}, Comments: is.comments, ClosedAt: tsPtr(is.closed),
		CreatedAt: ts(is.created), UpdatedAt: ts(is.updated), AuthorAssociation: c.association(r, is.user)}
	if is.state == "closed" {
		reason := "completed"
		out.StateReason = &reason
	}
	for _, l := range is.labels {
		out.Labels = append(out.Labels, c.labelJSON(r, l))
	}
	if is.pr != nil {
		pr := c.repoURL(r) + fmt.Sprintf("/pulls/%d", is.number)
		out.PullRequest = &issuePRLinks{URL: pr, HTMLURL: html, DiffURL: html + ".diff", PatchURL: html + ".patch"}
	}
	return out
}

func (c *call) labelJSON(r *repo, name string) labelJSON {
	var h int64
	for _, ch := range name {
		h = h*31 + int64(ch)
	}
	h &= 0xffffffff
	return labelJSON{ID: h, NodeID: fmt.Sprintf("LA_%d", h), URL: c.repoURL(r) + "/labels/" + name,
		Name: name, Color: fmt.Sprintf("%06x", h&0xffffff)}
}

func (c *call) commentJSON(r *repo, cm *comment) commentJSON {
	is := r.issue(cm.issue)
	ij := c.issueJSON(r, is)
	return commentJSON{ID: cm.id, NodeID: fmt.Sprintf("IC_%d", cm.id),
		URL:     c.repoURL(r) + fmt.Sprintf("/issues/comments/%d", cm.id),
		HTMLURL: fmt.Sprintf("%s#issuecomment-%d", ij.HTMLURL, cm.id), Body: cm.body,
		User: c.user(cm.user), CreatedAt: ts(cm.created), UpdatedAt: ts(cm.updated),
		IssueURL: ij.URL, AuthorAssociation: c.association(r, cm.user)}
}

func (c *call) eventJSON(r *repo, e *event) eventJSON {
	out := eventJSON{ID: e.id, NodeID: fmt.Sprintf("LE_%d", e.id),
		URL:   c.repoURL(r) + fmt.Sprintf("/issues/events/%d", e.id),
		Actor: c.user(e.actor), Event: e.event, CreatedAt: ts(e.created),
		Issue: c.issueJSON(r, r.issue(e.issue))}
	if e.label != "" {
		l := c.labelJSON(r, e.label)
		out.Label = &eventLabelJSON{Name: l.Name, Color: l.Color}
	}
	return out
}

func (c *call) repoJSON(r *repo) repoJSON {
	return repoJSON{ID: r.id, NodeID: fmt.Sprintf("R_%d", r.id), Name: r.name,
		FullName: r.owner + "/" + r.name, Owner: c.user(r.owner), Private: r.visibleTo != nil,
		HTMLURL: c.api() + "/" + r.owner + "/" + r.name, URL: c.repoURL(r)}
}

func (c *call) pullJSON(r *repo, is *issue) pullJSON {
	ij := c.issueJSON(r, is)
	branch := func(ref, sha string) branchJSON {
		return branchJSON{Label: r.owner + ":" + ref, Ref: ref, SHA: sha, User: c.user(r.owner), Repo: c.repoJSON(r)}
	}
	return pullJSON{URL: ij.PullRequest.URL, ID: is.id + 1<<32, NodeID: fmt.Sprintf("PR_%d", is.id),
		HTMLURL: ij.HTMLURL, DiffURL: ij.PullRequest.DiffURL, PatchURL: ij.PullRequest.PatchURL,
		IssueURL: ij.URL, Number: is.number, State: is.state, Title: is.title, User: ij.User,
		Body: ij.Body, Labels: ij.Labels, CreatedAt: ij.CreatedAt, UpdatedAt: ij.UpdatedAt,
		ClosedAt: ij.ClosedAt, Draft: is.pr.draft, Head: branch(is.pr.head, is.pr.sha),
		Base: branch(is.pr.base, fmt.Sprintf("%040x", r.id)), AuthorAssociation: ij.AuthorAssociation}
}

func (c *call) reviewJSON(r *repo, rv *review) reviewJSON {
	pr := c.repoURL(r) + fmt.Sprintf("/pulls/%d", rv.pr)
	return reviewJSON{ID: rv.id, NodeID: fmt.Sprintf("PRR_%d", rv.id), User: c.user(rv.user),
		Body: rv.body, State: rv.state,
		HTMLURL:        fmt.Sprintf("%s/%s/%s/pull/%d#pullrequestreview-%d", c.api(), r.owner, r.name, rv.pr, rv.id),
		PullRequestURL: pr, SubmittedAt: ts(rv.submitted), CommitID: rv.commit,
		AuthorAssociation: c.association(r, rv.user)}
}

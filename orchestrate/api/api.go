package api

import (
	"time"

	"orcr/core/wire"
)

// The API, one declaration per method.
var (
	PlanNew     = wire.Declare[PlanNewParams, PlanResult](MethodPlanNew, "Start a plan: a lead agent at plans/NAME/lead writes .orcr/plans/NAME.md.")
	PlanList    = wire.Declare[wire.Empty, PlanListResult](MethodPlanList, "Every plan, in name order.", wire.ReadOnly)
	PlanGet     = wire.Declare[PlanNameParams, PlanGetResult](MethodPlanGet, "One plan: its record and its file as it is now (milestones, problems by line, text).", wire.ReadOnly)
	PlanApprove = wire.Declare[PlanNameParams, PlanResult](MethodPlanApprove, "Approve a drafted plan: the file's sha256 is recorded.")
	PlanReject  = wire.Declare[PlanRejectParams, PlanResult](MethodPlanReject, "Reject a drafted plan with a reason the lead redrafts from.")
	CatalogGet  = wire.Declare[wire.Empty, CatalogResult](MethodCatalogGet, "The model catalog: ratings, tiers, premium models.", wire.ReadOnly)
)

// Plan method names.
const (
	MethodPlanNew     = "plan.new"
	MethodPlanList    = "plan.list"
	MethodPlanGet     = "plan.get"
	MethodPlanApprove = "plan.approve"
	MethodPlanReject  = "plan.reject"
	MethodCatalogGet  = "catalog.get"
)

// Plan events. Data has "name" and "state"; plan.state also "from" (the state before)
// and "text" (what happened); plan.edited "hash" (the file's sha256 now),
// "approvedHash" and "text".
const (
	EventPlanState  = "plan.state"
	EventPlanEdited = "plan.edited"
)

var _ = wire.DeclareEvents(EventPlanState, EventPlanEdited)

// Plan states (Plan.State), the values plan records keep (orchestrate.PlanState), named
// here for what reads a plan through the API: runs start only from an approved one.
const (
	StateDrafting = "drafting"
	StateDrafted  = "drafted"
	StateApproved = "approved"
	StateRejected = "rejected"
	StateFailed   = "failed"
)

// Plan is a plan's record as the API shows it.
type Plan struct {
	Name     string `json:"name"`
	Request  string `json:"request"`
	Repo     string `json:"repo"`
	File     string `json:"file"`
	LeadID   string `json:"leadId"`
	LeadPath string `json:"leadPath"`
	Lead     string `json:"lead"` // provider:model

	// State: drafting | drafted | approved | rejected | failed.
	State        string   `json:"state"`
	Rounds       int      `json:"rounds"`
	FixRounds    int      `json:"fixRounds"`
	Reason       string   `json:"reason"`
	FileHash     string   `json:"fileHash"`
	ApprovedHash string   `json:"approvedHash"`
	Errors       []string `json:"errors"` // what is wrong with the file now, each naming its line

	CreatedAt time.Time   `json:"createdAt"`
	UpdatedAt time.Time   `json:"updatedAt"`
	Events    []PlanEvent `json:"events"`
}

// PlanEvent is one thing that happened to a plan, newest last.
type PlanEvent struct {
	At   time.Time `json:"at"`
	Kind string    `json:"kind"`
	Text string    `json:"text"`
}

// PlanMilestone is one milestone of a parsed plan file.
type PlanMilestone struct {
	ID              string      `json:"id"`
	Title           string      `json:"title"`
	Line            int         `json:"line"`
	Depends         []string    `json:"depends"`
	Tier            string      `json:"tier"`
	Needs           []string    `json:"needs"`
	ModelWhy        string      `json:"modelWhy"`
	EstimateSeconds int         `json:"estimateSeconds"`
	Model           string      `json:"model"`
	State           string      `json:"state"`
	Goal            string      `json:"goal"`
	Acceptance      string      `json:"acceptance"`
	Checks          []PlanCheck `json:"checks"`
}

// PlanCheck is an Acceptance check box.
type PlanCheck struct {
	Line int    `json:"line"`
	Done bool   `json:"done"`
	Text string `json:"text"`
}

// PlanProblem is one problem of a plan file: its line (0 when none applies), a stable
// code (syntax, unknown_key, missing_key, bad_value, unknown_tier,
// unknown_dependency, dependency_cycle, duplicate_id, missing_section, unknown_model,
// premium_not_allowed, model_below_tier, unreadable) and the message.
type PlanProblem struct {
	Line    int    `json:"line"`
	Code    string `json:"code"`
	Message string `json:"message"`
}

// PlanNewParams starts a plan (plan.new): a lead agent at plans/NAME/lead in Repo.
type PlanNewParams struct {
	Name    string `json:"name"`
	Request string `json:"request"`
	Repo    string `json:"repo"` // absolute; any folder inside a git repository
	// Lead is "provider" or "provider:model"; empty picks a high-tier catalog model
	// of an installed provider.
	Lead string `json:"lead,omitempty"`
}

// PlanNameParams names one plan.
type PlanNameParams struct {
	Name string `json:"name"`
}

// PlanRejectParams rejects a drafted plan with the reason the lead redrafts from.
type PlanRejectParams struct {
	Name   string `json:"name"`
	Reason string `json:"reason"`
}

// PlanResult wraps one plan.
type PlanResult struct {
	Plan Plan `json:"plan"`
}

// PlanListResult answers plan.list, in name order.
type PlanListResult struct {
	Plans []Plan `json:"plans"`
}

// PlanGetResult answers plan.get: the record, and the file as it is now — parsed
// milestones, problems by line, and its text (empty when missing or unreadable).
type PlanGetResult struct {
	Plan       Plan            `json:"plan"`
	Check      string          `json:"check"`
	Mode       string          `json:"mode"`
	Premium    bool            `json:"premium"`
	Milestones []PlanMilestone `json:"milestones"`
	Problems   []PlanProblem   `json:"problems"`
	Missing    bool            `json:"missing"`
	Source     string          `json:"source"`
}

// CatalogModel is one model of the catalog with the highest tier it qualifies for.
type CatalogModel struct {
	Provider             string `json:"provider"`
	ID                   string `json:"id"`
	Reasoning            int    `json:"reasoning"`
	Coding               int    `json:"coding"`
	Architecture         int    `json:"architecture"`
	InstructionFollowing int    `json:"instructionFollowing"`
	ToolUse              int    `json:"toolUse"`
	Planning             int    `json:"planning"`
	Speed                int    `json:"speed"`
	Context              int    `json:"context"`
	Premium              bool   `json:"premium"`
	Tier                 string `json:"tier"` // "" when it meets no tier
}

// CatalogTier is a tier's minimum ratings (0: no minimum).
type CatalogTier struct {
	Name       string         `json:"name"`
	Min        map[string]int `json:"min"`
	MinContext int            `json:"minContext"`
}

// CatalogResult answers catalog.get: the merged catalog, and the table `orcr catalog`
// prints.
type CatalogResult struct {
	Models []CatalogModel `json:"models"`
	Tiers  []CatalogTier  `json:"tiers"`
	Table  string         `json:"table"`
}

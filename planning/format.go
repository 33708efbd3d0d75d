package planning

import (
	_ "embed"
)

//go:embed plan-example.md
var examplePlan []byte

//go:embed format.md
var formatIntro string

// ExamplePlan is an example plan in the format (a test parses it).
func ExamplePlan() []byte { return append([]byte(nil), examplePlan...) }

// FormatText is the plan format in words with the example, as `orcr plan format`
// prints it and orcr's installed skills point agents to.
func FormatText() string { return formatIntro + string(examplePlan) + "```\n" }

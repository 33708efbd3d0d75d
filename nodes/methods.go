package nodes

import (
	"context"

	"orcr/core/wire"
	nodeapi "orcr/nodes/api"
)

// Methods are the node.* socket methods (core.Feature).
func (s *Service) Methods() []wire.Handler {
	return []wire.Handler{
		wire.Handle(nodeapi.Add, func(ctx context.Context, p *nodeapi.AddParams) (nodeapi.Result, error) {
			n, err := s.Add(ctx, *p)
			return nodeapi.Result{Node: n}, err
		}),
		wire.Handle(nodeapi.List, func(ctx context.Context, _ *wire.Empty) (nodeapi.ListResult, error) {
			return nodeapi.ListResult{Nodes: s.List(ctx)}, nil
		}),
		wire.Handle(nodeapi.Show, func(ctx context.Context, p *nodeapi.NameParams) (nodeapi.Result, error) {
			n, err := s.Show(ctx, p.Name)
			return nodeapi.Result{Node: n}, err
		}),
		wire.Handle(nodeapi.Drain, func(ctx context.Context, p *nodeapi.DrainParams) (nodeapi.Result, error) {
			n, err := s.Drain(ctx, *p)
			return nodeapi.Result{Node: n}, err
		}),
		wire.Handle(nodeapi.Rm, func(ctx context.Context, p *nodeapi.RmParams) (nodeapi.RmResult, error) {
			lost, err := s.Remove(ctx, p.Name, p.Force)
			return nodeapi.RmResult{Lost: lost}, err
		}),
		wire.Handle(nodeapi.Facts, func(ctx context.Context, _ *wire.Empty) (nodeapi.FactsResult, error) {
			return s.facts(ctx), nil
		}),
		wire.Handle(nodeapi.Check, func(ctx context.Context, p *nodeapi.NameParams) (nodeapi.CheckResult, error) {
			return s.Check(ctx, p.Name)
		}),
		wire.Handle(nodeapi.Hello, func(ctx context.Context, _ *wire.Empty) (nodeapi.HelloResult, error) {
			return s.hello(ctx)
		}),
	}
}

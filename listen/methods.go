package listen

import (
	"context"

	"orcr/core/wire"
	listenapi "orcr/listen/api"
)

// Methods are the listener.* socket methods (core.Feature).
func (s *Service) Methods() []wire.Handler {
	return []wire.Handler{
		wire.Handle(listenapi.ListenerList, func(ctx context.Context, _ *wire.Empty) (listenapi.ListenerListResult, error) {
			ls, err := s.Listeners(ctx)
			if ls == nil {
				ls = []listenapi.Listener{}
			}
			return listenapi.ListenerListResult{Listeners: ls}, err
		}),
		wire.Handle(listenapi.ListenerGet, func(ctx context.Context, p *listenapi.ListenerNameParams) (listenapi.ListenerResult, error) {
			l, err := s.ListenerGet(ctx, p.Name)
			return listenapi.ListenerResult{Listener: l}, err
		}),
		wire.Handle(listenapi.ListenerPut, func(ctx context.Context, p *listenapi.ListenerPutParams) (listenapi.ListenerResult, error) {
			l, err := s.ListenerPut(ctx, *p)
			return listenapi.ListenerResult{Listener: l}, err
		}),
		wire.Handle(listenapi.ListenerRemove, func(ctx context.Context, p *listenapi.ListenerNameParams) (wire.Empty, error) {
			return wire.Empty{}, s.ListenerRemove(ctx, p.Name)
		}),
		wire.Handle(listenapi.ListenerEnable, func(ctx context.Context, p *listenapi.ListenerEnableParams) (listenapi.ListenerResult, error) {
			if p.Enabled == nil {
				return listenapi.ListenerResult{}, wire.Errorf(wire.CodeInvalidParams, "listener.enable: missing required param \"enabled\" (true or false)")
			}
			l, err := s.ListenerEnable(ctx, p.Name, *p.Enabled)
			return listenapi.ListenerResult{Listener: l}, err
		}),
	}
}

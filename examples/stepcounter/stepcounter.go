// Package stepcounter is an example app for the in-device application
// interface: it subscribes to the accelerometer from inside the device,
// counts steps, and provides its own resources (stepcounter.yaml) that
// every calling path reaches:
//
//	GET    /Sample/StepCounter/Steps              {"Steps": n}
//	DELETE /Sample/StepCounter/Steps              clear the count
//	SUBSCRIBE /Sample/StepCounter/Steps           a notification per step
//	GET, PUT /Sample/StepCounter/Config           {"Threshold": m/s^2}
//
// A step is a rise of the acceleration's magnitude above its running mean
// by more than the threshold, at least MinInterval after the previous step.
package stepcounter

import (
	_ "embed"
	"math"
	"slices"
	"time"

	"senseboard/app"
	"senseboard/content"
	"senseboard/device"
	"senseboard/resource"
)

//go:embed stepcounter.yaml
var definition []byte

// Definition returns the app's definition of its resources: Swagger 2.0
// YAML, as the device serves it to a central that asks for its definitions.
func Definition() []byte { return slices.Clone(definition) }

// The app's tuning.
const (
	// Rate is the accelerometer rate the app subscribes at.
	Rate = 52
	// MinInterval is the shortest time between two steps.
	MinInterval = 250 * time.Millisecond
	// DefaultThreshold is the rise above the mean that makes a step, m/s^2.
	DefaultThreshold = 1.2
)

// StepCount is the content of GET /Sample/StepCounter/Steps and its notifications.
type StepCount struct {
	Steps uint32 `json:"Steps"`
}

// StepConfig is the app's configuration.
type StepConfig struct {
	Threshold float32 `json:"Threshold"`
}

// App counts steps. Its state belongs to the app's goroutine.
type App struct {
	ctx       *app.Context
	steps     uint32
	threshold float64
	mean      float64
	above     bool
	last      uint32 // relative time of the last step, ms
	started   bool
}

// New returns the app.
func New() *App { return &App{threshold: DefaultThreshold} }

// Name names the app.
func (a *App) Name() string { return "StepCounter" }

// Start provides the app's resources and subscribes to the accelerometer.
func (a *App) Start(ctx *app.Context) error {
	*a = App{ctx: ctx, threshold: DefaultThreshold}
	err := ctx.Provide(definition, app.Handlers{
		"GET /Sample/StepCounter/Steps": func(*resource.Request) resource.Response {
			return resource.OK(&StepCount{Steps: a.steps})
		},
		"DELETE /Sample/StepCounter/Steps": func(*resource.Request) resource.Response {
			a.steps = 0
			return resource.OK(nil)
		},
		"GET /Sample/StepCounter/Config": func(*resource.Request) resource.Response {
			return resource.OK(&StepConfig{Threshold: float32(a.threshold)})
		},
		"PUT /Sample/StepCounter/Config": func(req *resource.Request) resource.Response {
			var c StepConfig
			if err := req.Arg(0).Decode(&c); err != nil {
				return resource.Errorf(resource.StatusBadRequest, "StepConfig: %v", err)
			}
			a.threshold = float64(c.Threshold)
			return resource.OK(nil)
		},
	})
	if err != nil {
		return err
	}
	ctx.Subscribe("/Meas/Acc/{SampleRate}", a.onAcc, func(env resource.Envelope) {
		if !env.Status.OK() {
			ctx.Logf(device.LevelError, "step counter: no accelerometer: %s", env.Error)
		}
	}, resource.Uint16(Rate)).Borrow() // onAcc keeps nothing of a notification
	return nil
}

// onAcc runs on the app's goroutine for every accelerometer notification.
func (a *App) onAcc(v any) {
	m, ok := v.(*content.MotionData)
	if !ok {
		return
	}
	const period = 1000.0 / Rate
	for i, v := range m.ArrayAcc {
		mag := math.Sqrt(float64(v.X)*float64(v.X) + float64(v.Y)*float64(v.Y) + float64(v.Z)*float64(v.Z))
		if !a.started {
			a.mean, a.started = mag, true
		}
		a.mean += (mag - a.mean) * 0.02 // a mean over about a second
		t := m.Timestamp + uint32(float64(i)*period)
		switch {
		case !a.above && mag-a.mean > a.threshold && t-a.last >= uint32(MinInterval/time.Millisecond):
			a.above, a.last = true, t
			a.steps++
			a.ctx.Notify("/Sample/StepCounter/Steps", &StepCount{Steps: a.steps})
		case a.above && mag-a.mean < 0:
			a.above = false
		}
	}
}

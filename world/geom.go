package world

import "math"

// Vec3 is a vector in three dimensions.
type Vec3 struct{ X, Y, Z float64 }

// Add returns v+w.
func (v Vec3) Add(w Vec3) Vec3 { return Vec3{v.X + w.X, v.Y + w.Y, v.Z + w.Z} }

// Sub returns v-w.
func (v Vec3) Sub(w Vec3) Vec3 { return Vec3{v.X - w.X, v.Y - w.Y, v.Z - w.Z} }

// Scale returns v*k.
func (v Vec3) Scale(k float64) Vec3 { return Vec3{v.X * k, v.Y * k, v.Z * k} }

// Dot returns the dot product.
func (v Vec3) Dot(w Vec3) float64 { return v.X*w.X + v.Y*w.Y + v.Z*w.Z }

// Cross returns the cross product.
func (v Vec3) Cross(w Vec3) Vec3 {
	return Vec3{v.Y*w.Z - v.Z*w.Y, v.Z*w.X - v.X*w.Z, v.X*w.Y - v.Y*w.X}
}

// Norm returns the length.
func (v Vec3) Norm() float64 { return math.Sqrt(v.Dot(v)) }

// Quat is a unit quaternion: the rotation from the device frame to the world
// frame (east, north, up).
type Quat struct{ W, X, Y, Z float64 }

// Identity is the rotation that does nothing.
var Identity = Quat{W: 1}

// Mul returns the rotation q after r.
func (q Quat) Mul(r Quat) Quat {
	return Quat{
		q.W*r.W - q.X*r.X - q.Y*r.Y - q.Z*r.Z,
		q.W*r.X + q.X*r.W + q.Y*r.Z - q.Z*r.Y,
		q.W*r.Y - q.X*r.Z + q.Y*r.W + q.Z*r.X,
		q.W*r.Z + q.X*r.Y - q.Y*r.X + q.Z*r.W,
	}
}

// Conj returns the inverse rotation.
func (q Quat) Conj() Quat { return Quat{q.W, -q.X, -q.Y, -q.Z} }

// Rotate rotates v by q.
func (q Quat) Rotate(v Vec3) Vec3 {
	// v' = v + 2w(u x v) + 2u x (u x v), with u the vector part
	u := Vec3{q.X, q.Y, q.Z}
	t := u.Cross(v).Scale(2)
	return v.Add(t.Scale(q.W)).Add(u.Cross(t))
}

// Normalize returns q scaled to unit length.
func (q Quat) Normalize() Quat {
	n := math.Sqrt(q.W*q.W + q.X*q.X + q.Y*q.Y + q.Z*q.Z)
	return Quat{q.W / n, q.X / n, q.Y / n, q.Z / n}
}

// FromBasis returns the rotation whose device axes x, y and z point along the
// given orthonormal world vectors.
func FromBasis(x, y, z Vec3) Quat {
	// rotation matrix columns x, y, z
	m00, m01, m02 := x.X, y.X, z.X
	m10, m11, m12 := x.Y, y.Y, z.Y
	m20, m21, m22 := x.Z, y.Z, z.Z
	tr := m00 + m11 + m22
	var q Quat
	switch {
	case tr > 0:
		s := math.Sqrt(tr+1) * 2
		q = Quat{0.25 * s, (m21 - m12) / s, (m02 - m20) / s, (m10 - m01) / s}
	case m00 > m11 && m00 > m22:
		s := math.Sqrt(1+m00-m11-m22) * 2
		q = Quat{(m21 - m12) / s, 0.25 * s, (m01 + m10) / s, (m02 + m20) / s}
	case m11 > m22:
		s := math.Sqrt(1+m11-m00-m22) * 2
		q = Quat{(m02 - m20) / s, (m01 + m10) / s, 0.25 * s, (m12 + m21) / s}
	default:
		s := math.Sqrt(1+m22-m00-m11) * 2
		q = Quat{(m10 - m01) / s, (m02 + m20) / s, (m12 + m21) / s, 0.25 * s}
	}
	return q.Normalize()
}

// Slerp interpolates from q to r by f in [0, 1] along the shorter arc.
func Slerp(q, r Quat, f float64) Quat {
	d := q.W*r.W + q.X*r.X + q.Y*r.Y + q.Z*r.Z
	if d < 0 {
		r, d = Quat{-r.W, -r.X, -r.Y, -r.Z}, -d
	}
	if d > 0.9995 {
		return Quat{q.W + f*(r.W-q.W), q.X + f*(r.X-q.X), q.Y + f*(r.Y-q.Y), q.Z + f*(r.Z-q.Z)}.Normalize()
	}
	th := math.Acos(d)
	s := math.Sin(th)
	a, b := math.Sin((1-f)*th)/s, math.Sin(f*th)/s
	return Quat{a*q.W + b*r.W, a*q.X + b*r.X, a*q.Y + b*r.Y, a*q.Z + b*r.Z}
}

// Angle returns the rotation angle between q and r, radians.
func Angle(q, r Quat) float64 {
	d := math.Abs(q.W*r.W + q.X*r.X + q.Y*r.Y + q.Z*r.Z)
	if d > 1 {
		d = 1
	}
	return 2 * math.Acos(d)
}

// Nlerp interpolates from q to r by f by normalized linear interpolation:
// for the small angles between neighbouring ticks of the control track (at
// most 0.03 rad, a posture's turn in a tick) it matches Slerp to within
// 1.1e-7 rad, at a fraction of the cost.
func Nlerp(q, r Quat, f float64) Quat {
	if q.W*r.W+q.X*r.X+q.Y*r.Y+q.Z*r.Z < 0 {
		r = Quat{-r.W, -r.X, -r.Y, -r.Z}
	}
	return Quat{q.W + f*(r.W-q.W), q.X + f*(r.X-q.X), q.Y + f*(r.Y-q.Y), q.Z + f*(r.Z-q.Z)}.Normalize()
}

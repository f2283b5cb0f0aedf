/*
 * tg_pixels.cuh — stored pixel types on the device: bands travel in their
 * stored type (2 bytes a cell for the usual Int16 DEM) and are decoded by the
 * kernels that read them.
 */
#ifndef TG_PIXELS_CUH
#define TG_PIXELS_CUH

#include <cstdint>
#include <type_traits>

#include "tg_core.h"

/* A stored pixel type: storage type T and, for sub-byte types, the bit mask. */
template <typename T, unsigned MASK>
struct pixel_format
{
	using storage = T;

	static __device__ __forceinline__ double load(const T *__restrict__ p, size_t i)
	{
		if constexpr (MASK != 0)
			return (double) (p[i] & MASK);
		else
			return (double) p[i];
	}
	static constexpr bool is_float = std::is_floating_point<T>::value;
};

/*
 * Call f(pixel_format<...>{}) for the band's pixel type: one instantiation of
 * the caller's kernels per stored type.
 */
template <typename F>
void
with_pixel_format(tg_pixtype pt, F &&f)
{
	switch (pt)
	{
		case TG_PT_1BB:
			f(pixel_format<uint8_t, 0x01>{});
			break;
		case TG_PT_2BUI:
			f(pixel_format<uint8_t, 0x03>{});
			break;
		case TG_PT_4BUI:
			f(pixel_format<uint8_t, 0x0F>{});
			break;
		case TG_PT_8BSI:
			f(pixel_format<int8_t, 0>{});
			break;
		case TG_PT_8BUI:
			f(pixel_format<uint8_t, 0>{});
			break;
		case TG_PT_16BSI:
			f(pixel_format<int16_t, 0>{});
			break;
		case TG_PT_16BUI:
			f(pixel_format<uint16_t, 0>{});
			break;
		case TG_PT_32BSI:
			f(pixel_format<int32_t, 0>{});
			break;
		case TG_PT_32BUI:
			f(pixel_format<uint32_t, 0>{});
			break;
		case TG_PT_32BF:
			f(pixel_format<float, 0>{});
			break;
		case TG_PT_64BF:
			f(pixel_format<double, 0>{});
			break;
	}
}

/* Are all values of this stored type exact in a float? */
static inline bool
pixtype_fits_float(tg_pixtype pt)
{
	return pt != TG_PT_32BSI && pt != TG_PT_32BUI && pt != TG_PT_64BF;
}

#endif							/* TG_PIXELS_CUH */

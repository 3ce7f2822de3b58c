// add_kernel: emitted by npujit from the scheduled kernel; Vector (AIV) core.
#include "kernel_operator.h"
#include "add_kernel_tiling.h"

// Elements DataCopyPad adds after n elements to end on a 32-byte boundary.
template <typename T>
__aicore__ inline uint8_t TailPad(uint32_t n)
{
    return static_cast<uint8_t>((32 - n * sizeof(T) % 32) % 32 / sizeof(T));
}

// How many of a tile's `lanes` leading lanes are in bounds (a mask's count).
__aicore__ inline uint32_t LanesInBounds(int64_t n, uint32_t lanes)
{
    return n <= 0 ? 0u : (n >= lanes ? lanes : static_cast<uint32_t>(n));
}

class AddKernel {
public:
    __aicore__ inline void Init(GM_ADDR x_ptr, GM_ADDR y_ptr, GM_ADDR out_ptr, const AddKernelTiling& tiling)
    {
        tiling_ = tiling;
        xGm_.SetGlobalBuffer(reinterpret_cast<__gm__ float*>(x_ptr));
        yGm_.SetGlobalBuffer(reinterpret_cast<__gm__ float*>(y_ptr));
        outGm_.SetGlobalBuffer(reinterpret_cast<__gm__ float*>(out_ptr));
        pipe_.InitBuffer(xQue_, 1, 1024);
        pipe_.InitBuffer(yQue_, 1, 1024);
        pipe_.InitBuffer(addQue_, 1, 1024);
    }

    __aicore__ inline void Process()
    {
        // The grid may exceed the cores: core b runs programs b, b + GetBlockNum(), ...
        const int64_t programs = static_cast<int64_t>(tiling_.grid0) * tiling_.grid1 * tiling_.grid2;
        for (int64_t program = AscendC::GetBlockIdx(); program < programs;
             program += AscendC::GetBlockNum()) {
            RunProgram(static_cast<int32_t>(program % tiling_.grid0));
        }
    }

private:
    __aicore__ inline void RunProgram(int32_t pid0)
    {
        // elementwise.py:20  pid = nl.program_id(0)
        const int32_t pid = pid0;
        // elementwise.py:21  offs = pid * BLOCK + nl.arange(0, BLOCK)
        const int32_t offs = pid * 256;
        // elementwise.py:22  mask = offs < n
        const uint32_t mask_len = LanesInBounds(tiling_.n - offs, 256);
        // elementwise.py:23  x = nl.load(x_ptr + offs, mask=mask)
        AscendC::LocalTensor<float> x = xQue_.AllocTensor<float>();
        AscendC::Duplicate(x, 0.0f, 256);   // masked-off lanes read 0
        AscendC::SetFlag<AscendC::HardEvent::V_MTE2>(0);
        AscendC::WaitFlag<AscendC::HardEvent::V_MTE2>(0);
        if (mask_len > 0) {
            AscendC::DataCopyPad(x, xGm_[offs], {1, static_cast<uint32_t>(mask_len * sizeof(float)), 0, 0, 0}, {true, 0, TailPad<float>(mask_len), 0.0f});
        }
        xQue_.EnQue(x);
        // elementwise.py:24  y = nl.load(y_ptr + offs, mask=mask)
        AscendC::LocalTensor<float> y = yQue_.AllocTensor<float>();
        AscendC::Duplicate(y, 0.0f, 256);   // masked-off lanes read 0
        AscendC::SetFlag<AscendC::HardEvent::V_MTE2>(0);
        AscendC::WaitFlag<AscendC::HardEvent::V_MTE2>(0);
        if (mask_len > 0) {
            AscendC::DataCopyPad(y, yGm_[offs], {1, static_cast<uint32_t>(mask_len * sizeof(float)), 0, 0, 0}, {true, 0, TailPad<float>(mask_len), 0.0f});
        }
        yQue_.EnQue(y);
        // elementwise.py:25  nl.store(out_ptr + offs, x + y, mask=mask)
        x = xQue_.DeQue<float>();
        y = yQue_.DeQue<float>();
        AscendC::LocalTensor<float> add = addQue_.AllocTensor<float>();
        AscendC::Add(add, x, y, 256);
        addQue_.EnQue(add);
        xQue_.FreeTensor(x);
        yQue_.FreeTensor(y);
        add = addQue_.DeQue<float>();
        if (mask_len > 0) {
            AscendC::DataCopyPad(outGm_[offs], add, {1, static_cast<uint32_t>(mask_len * sizeof(float)), 0, 0, 0});
        }
        addQue_.FreeTensor(add);
    }

    AscendC::TPipe pipe_;
    AscendC::TQue<AscendC::TPosition::VECIN, 1> xQue_;
    AscendC::TQue<AscendC::TPosition::VECIN, 1> yQue_;
    AscendC::TQue<AscendC::TPosition::VECOUT, 1> addQue_;
    AscendC::GlobalTensor<float> xGm_;
    AscendC::GlobalTensor<float> yGm_;
    AscendC::GlobalTensor<float> outGm_;
    AddKernelTiling tiling_;
};

extern "C" __global__ __aicore__ void add_kernel(GM_ADDR x_ptr, GM_ADDR y_ptr, GM_ADDR out_ptr, GM_ADDR /*workspace*/, GM_ADDR tiling)
{
    AddKernel op;
    op.Init(x_ptr, y_ptr, out_ptr, *reinterpret_cast<__gm__ AddKernelTiling*>(tiling));
    op.Process();
}

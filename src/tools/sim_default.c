/*
 * sim_default.c - the built-in default scenario of harmonics-sim: the
 * testbed-sized contention scenario of docs/evaluation.md (24 hosts in 3 racks,
 * 2 GPUs per host, 12 catalogue jobs of 4 GPUs; two jobs share every host and
 * its NIC, every job spans two racks so the oversubscribed uplinks are shared).
 * The same trace is docs/eval/testbed-trace.csv; tests/cli/run.sh checks that
 * both give the same result.
 */
#include "sim_default.h"

const char sim_default_topo_gen[] = "racks=3,hosts=8,gpus=2,nic=10G,oversub=2";

const char sim_default_trace[] =
	"arrival_s,name,gpus,model,duration_s,nodes\n"
	"0,resnet50-a,4,resnet50,900,\"n[0001-0002,0009-0010]\"\n"
	"10,bert-base-a,4,bert-base,900,\"n[0001-0002,0009-0010]\"\n"
	"20,vgg16-b,4,vgg16,900,\"n[0003-0004,0011-0012]\"\n"
	"30,gpt2-s-b,4,gpt2-s,900,\"n[0003-0004,0011-0012]\"\n"
	"40,bert-large-c,4,bert-large,900,\"n[0005-0006,0017-0018]\"\n"
	"50,yolov3-c,4,yolov3,900,\"n[0005-0006,0017-0018]\"\n"
	"60,gpt2-m-d,4,gpt2-m,900,\"n[0007-0008,0019-0020]\"\n"
	"70,deepspeech2-d,4,deepspeech2,900,\"n[0007-0008,0019-0020]\"\n"
	"80,vgg19-e,4,vgg19,900,\"n[0013-0014,0021-0022]\"\n"
	"90,resnet50-e,4,resnet50,900,\"n[0013-0014,0021-0022]\"\n"
	"100,bert-base-f,4,bert-base,900,\"n[0015-0016,0023-0024]\"\n"
	"110,gpt2-s-f,4,gpt2-s,900,\"n[0015-0016,0023-0024]\"\n"
;

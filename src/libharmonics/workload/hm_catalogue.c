/*
 * hm_catalogue.c - built-in model catalogue: public models with their gradient
 * size and per-iteration compute time. Every number's source and derivation is
 * in the entry's `source` string and in docs/models.md.
 *
 * Compute times come from the public Pollux measurements (8 nodes x 4 GPUs,
 * step / sync seconds). compute_s = step - sync: the sync time Pollux reports
 * is the exposed communication, so step - sync is the part of the step that no
 * network can shorten. Models Pollux did not measure are scaled from a measured
 * one with the same per-GPU batch by FLOPs per sample (CNNs) or by parameter
 * count (transformers, whose training FLOPs are ~6 x params x tokens).
 */
#include "hm_job.h"

#include <string.h>
#include <strings.h>

/* Pollux anchors: compute = step - sync (seconds). */
#define POLLUX_RESNET50_S    (0.671 - 0.232) /* 0.439 s */
#define POLLUX_BERT_S        (1.882 - 1.199) /* 0.683 s, BERT-base fine-tuning */
#define POLLUX_DEEPSPEECH2_S (1.390 - 0.589) /* 0.801 s */
#define POLLUX_YOLOV3_S      (1.656 - 1.121) /* 0.535 s */
#define POLLUX_RESNET18_S    (0.225 - 0.117) /* 0.108 s, CIFAR-10 */

/* Forward+backward GFLOPs per 224x224 image (torchvision model cards). */
#define GFLOPS_RESNET50 4.1
#define GFLOPS_VGG16    15.5
#define GFLOPS_VGG19    19.6

#define BERT_BASE_PARAMS 110e6

static const hm_model_t catalogue[] = {
    {"resnet50", 25.6e6, 4, POLLUX_RESNET50_S,
     "params: notes table; compute: Pollux ResNet-50 8x4 step 0.671 s - sync 0.232 s"},
    {"vgg16", 138.4e6, 4, POLLUX_RESNET50_S *GFLOPS_VGG16 / GFLOPS_RESNET50,
     "params: notes table; compute: ResNet-50 anchor x FLOP ratio 15.5/4.1 GFLOPs"},
    {"vgg19", 143.7e6, 4, POLLUX_RESNET50_S *GFLOPS_VGG19 / GFLOPS_RESNET50,
     "params: notes table; compute: ResNet-50 anchor x FLOP ratio 19.6/4.1 GFLOPs"},
    {"bert-base", BERT_BASE_PARAMS, 4, POLLUX_BERT_S,
     "params: notes table; compute: Pollux BERT 8x4 step 1.882 s - sync 1.199 s"},
    {"bert-large", 340e6, 4, POLLUX_BERT_S * 340e6 / BERT_BASE_PARAMS,
     "params: notes table; compute: BERT-base anchor x parameter ratio 340/110"},
    {"gpt2-s", 124e6, 4, POLLUX_BERT_S * 124e6 / BERT_BASE_PARAMS,
     "params: notes table; compute: BERT-base anchor x parameter ratio 124/110"},
    {"gpt2-m", 355e6, 4, POLLUX_BERT_S * 355e6 / BERT_BASE_PARAMS,
     "params: notes table; compute: BERT-base anchor x parameter ratio 355/110"},
    {"gpt2-l", 774e6, 4, POLLUX_BERT_S * 774e6 / BERT_BASE_PARAMS,
     "params: notes table; compute: BERT-base anchor x parameter ratio 774/110"},
    {"gpt2-xl", 1.5e9, 4, POLLUX_BERT_S * 1.5e9 / BERT_BASE_PARAMS,
     "params: notes table; compute: BERT-base anchor x parameter ratio 1500/110"},
    {"deepspeech2", 25.6e6 * 0.589 / 0.232, 4, POLLUX_DEEPSPEECH2_S,
     "params [guess]: ResNet-50 size x Pollux sync ratio 0.589/0.232; compute: Pollux "
     "DeepSpeech2 8x4 step 1.390 s - sync 0.589 s"},
    {"yolov3", 61.9e6, 4, POLLUX_YOLOV3_S,
     "params: YOLOv3 (Darknet-53) public model summary; compute: Pollux YOLOv3 8x4 step "
     "1.656 s - sync 1.121 s"},
    {"resnet18", 11.2e6, 4, POLLUX_RESNET18_S,
     "params: ResNet-18 CIFAR-10 variant (public model definition); compute: Pollux ResNet-18 8x4 "
     "step 0.225 s - sync "
     "0.117 s"},
    {NULL, 0, 0, 0, NULL},
};

const hm_model_t *hm_catalogue(void)
{
	return catalogue;
}

const hm_model_t *hm_catalogue_find(const char *name)
{
	if (!name)
		return NULL;
	for (const hm_model_t *m = catalogue; m->name; m++)
		if (strcasecmp(m->name, name) == 0)
			return m;
	return NULL;
}

const char *hm_catalogue_names(void)
{
	/* A literal, so callers on any thread get it without locking; test_job checks
	 * that it lists exactly the catalogue in order. */
	return "resnet50, vgg16, vgg19, bert-base, bert-large, gpt2-s, gpt2-m, gpt2-l, gpt2-xl, "
	       "deepspeech2, yolov3, resnet18";
}

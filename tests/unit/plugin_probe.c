/* A module for test_plugin's PluginDir loader to find and load. */
int hm_probe_value(void);

int hm_probe_value(void)
{
	return 42;
}

<h1>{{ config.site_name }}</h1>
<p class="print-cover-lead">{{ config.site_description }}</p>
<p class="print-cover-site">
  The course online, with its labs to run:
  <a href="{{ config.site_url }}">{{ config.site_url }}</a>
</p>
<p class="print-cover-built" id="print-built-from"></p>
